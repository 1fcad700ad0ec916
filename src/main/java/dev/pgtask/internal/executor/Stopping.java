package dev.pgtask.internal.executor;

/**
 * The executor's two shutdown flags, set once each by {@link ExecutorShutdown} on the thread that
 * stops the worker, and read (volatile) by everyone else.
 */
final class Stopping {

  /**
   * No task starts any more: a task not locked yet is put back, a handler about to start is stopped,
   * a commit's hand-off notifies the other workers. Written by the stopping thread; read by the
   * executor threads.
   */
  volatile boolean stopping;

  /**
   * The executor threads are gone: a claim handed over now is put back at once. Written by the
   * stopping thread; read by the producer's thread in {@link Intake}.
   */
  volatile boolean closed;
}
