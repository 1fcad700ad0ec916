package dev.pgtask;

import java.sql.Connection;

/**
 * How a {@link PgTask} finds the transaction its caller is in, for the enqueues that are given no
 * connection ({@code enqueue(args)}, {@code enqueueAll(tasks)}). The default, {@link #NONE}, knows
 * of none: each such enqueue commits on its own. A framework that keeps a thread's transaction
 * somewhere (Spring's {@code TransactionSynchronizationManager}, see {@code dev.pgtask.spring}) hands
 * that transaction's connection out here, and the enqueue becomes part of it: it commits or rolls
 * back with the caller's work.
 *
 * <p>Implementations must be thread-safe; they are asked once per enqueue, on the calling thread.
 */
public interface CurrentTransaction {

  /** Knows of no transaction: every enqueue without a connection commits on its own. */
  CurrentTransaction NONE = () -> null;

  /**
   * The connection of the transaction the calling thread is in right now, or {@code null} when it
   * is in none (the enqueue then commits on its own). PgTask neither commits, rolls back nor closes
   * it; it gives it back with {@link #release}.
   */
  Connection connection();

  /** Gives back a connection {@link #connection()} returned, once the enqueue is done with it. */
  default void release(Connection connection) {}
}
