package dev.pgtask.internal.maintenance;

import dev.pgtask.internal.sql.MaintenanceQueries;
import java.time.Duration;
import java.util.concurrent.Executor;
import org.jooq.DSLContext;

/**
 * Tenant repair: (tenant, queue) pairs left with waiting tasks and no head get one. The triggers
 * hand the head on in the transaction that ends one; the one event that leaves a pair headless is
 * an enqueue that commits while the head it waited behind finishes. That is rare, and a repair
 * within a rescue interval is enough, so the leader runs it in its rescue round
 * ({@link RescueRound}, under the rescue lock) rather than as a pass of its own;
 * {@link #runOnce()} runs it at once on any worker, under its own lock.
 */
public final class TenantRepairPass implements MaintenancePass<Integer>, PassStatements<Integer> {

  private final Duration interval;
  private final PassTransaction tx;
  private final Runnable wakeProducer;

  /** {@code interval}: the rescue round's, which carries this pass. */
  TenantRepairPass(Duration interval, PassTransaction tx, Runnable wakeProducer) {
    this.interval = interval;
    this.tx = tx;
    this.wakeProducer = wakeProducer;
  }

  @Override
  public String name() {
    return "tenant repair";
  }

  @Override
  public Duration interval() {
    return interval;
  }

  @Override
  public PassLock lock() {
    return PassLock.TENANT_REPAIR;
  }

  /** Returns the tenants that got a new head. */
  @Override
  public Integer run(DSLContext t) {
    return MaintenanceQueries.repairTenantHeads(t);
  }

  /** A new head is claimable: wake the producer. */
  @Override
  public void committed(Integer repaired, Executor onPool) {
    if (repaired > 0) {
      wakeProducer.run();
    }
  }

  /** Returns the tenants that got a new head (0 when another worker's repair held the lock). */
  @Override
  public Integer runOnce() {
    return tx.countOnPool(this);
  }
}
