package dev.pgtask.internal.executor;

/** A task transaction that ended before its commit; {@code culprit}, when known, caused it. */
final class TransactionLost extends Exception {
  private static final long serialVersionUID = 1L;
  final transient LocalTask culprit;
  final boolean endedByHandler;

  TransactionLost(Throwable cause, LocalTask culprit, boolean endedByHandler) {
    super(cause);
    this.culprit = culprit;
    this.endedByHandler = endedByHandler;
  }
}
