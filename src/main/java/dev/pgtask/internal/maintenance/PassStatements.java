package dev.pgtask.internal.maintenance;

import java.util.concurrent.Executor;
import org.jooq.DSLContext;

/**
 * The statements of one maintenance pass in one transaction of the driver
 * ({@link PassTransaction}), and what the pass does once that transaction has committed.
 *
 * @param <R> what the statements found
 */
@FunctionalInterface
public interface PassStatements<R> {

  /**
   * The cluster-wide lock the transaction takes before anything else (at most one pass of this
   * kind at a time), or null: the pass needs none.
   */
  default PassLock lock() {
    return null;
  }

  /**
   * The pass's statements, in the transaction {@code tx} (its pass lock taken, and the lease
   * renewed when the pass is the leader's). On the listener's session for the tick: keep it short.
   * May return null (it ran nothing).
   */
  R run(DSLContext tx);

  /**
   * Once the transaction committed (never when it rolled back, nor when the pass did not run):
   * counts, logs, wake-ups. Work that needs a pool connection (registering again, a vacuum, an
   * analyze) goes through {@code onPool}: it runs at once on the maintenance thread, and is handed
   * to that thread when the transaction ran on the listener's session.
   */
  default void committed(R result, Executor onPool) {}
}
