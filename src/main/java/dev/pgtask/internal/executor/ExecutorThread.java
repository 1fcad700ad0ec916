package dev.pgtask.internal.executor;

import java.util.ArrayDeque;

/**
 * What one executor thread works on: its open transaction, and tasks to run alone. Owned by its
 * thread (an executor thread, or the caller of a {@link DirectRun}).
 */
final class ExecutorThread {
  /** Written by its thread; read by {@link ExecutorShutdown#abortTransactions} at shutdown. */
  volatile TaskTransaction tx;
  /** Tasks of a failed commit batch: each runs again in a transaction of its own. Its thread only. */
  final ArrayDeque<LocalTask> alone = new ArrayDeque<>();
}
