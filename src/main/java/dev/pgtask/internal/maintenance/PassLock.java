package dev.pgtask.internal.maintenance;

import dev.pgtask.internal.sql.MaintenanceQueries;

/**
 * The cluster-wide locks of the maintenance passes: transaction-level advisory locks
 * {@code (namespace, key)} with a negative key (tenant ids are positive), taken by
 * {@link MaintenanceQueries#tryPassLock} as the first statement of a pass's transaction. At most one
 * pass of a kind runs at a time in the cluster, and nothing outlives the transaction.
 */
public enum PassLock {
  /** The rescue pass, and the leader's rescue round (which carries the tenant repair). */
  RESCUE(MaintenanceQueries.RESCUE_LOCK_KEY),
  /** The tenant repair pass run on its own. */
  TENANT_REPAIR(MaintenanceQueries.TENANT_REPAIR_LOCK_KEY),
  /** Retention (and the stale worker rows, the unhandled kinds in its first batch). */
  RETENTION(MaintenanceQueries.PRUNE_LOCK_KEY);

  /** The lock's key in the worker's lock namespace. */
  final int key;

  PassLock(int key) {
    this.key = key;
  }
}
