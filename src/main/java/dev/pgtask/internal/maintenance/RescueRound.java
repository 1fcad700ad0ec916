package dev.pgtask.internal.maintenance;

import dev.pgtask.internal.sql.MaintenanceQueries;
import java.util.concurrent.Executor;
import org.jooq.DSLContext;

/**
 * The leader's rescue round, in the transaction of its tick when due (every rescue interval, at
 * once when it has just taken the lease), under the rescue lock: the {@link RescuePass}, the
 * {@link TenantRepairPass}, and a read of the task table's row versions; once committed, their
 * after-commit steps, then a {@link VacuumPass} turn when the dead row versions are many and an
 * {@link AnalyzePass} when the table outgrew its plans.
 */
final class RescueRound implements PassStatements<RescueRound.Round> {

  /** What a round did. */
  record Round(int rescued, int repaired, MaintenanceQueries.TaskTableRows table) {}

  private final RescuePass rescue;
  private final TenantRepairPass repair;
  private final VacuumPass vacuum;
  private final AnalyzePass analyze;
  private final long intervalNanos;
  private final long beatNanos;
  // System.nanoTime() of the last round; written by the thread that ran a round's after-commit step
  // (the maintenance thread, the listener's) and by a worker that has just taken the lease
  private volatile long lastRound;

  RescueRound(RescuePass rescue, TenantRepairPass repair, VacuumPass vacuum, AnalyzePass analyze, long beatNanos) {
    this.rescue = rescue;
    this.repair = repair;
    this.vacuum = vacuum;
    this.analyze = analyze;
    this.intervalNanos = rescue.config().interval().toNanos();
    this.beatNanos = beatNanos;
  }

  /** Whether a round is due: a rescue interval since the last one, less half a beat (a tick's lateness). */
  boolean due() {
    return System.nanoTime() - lastRound >= intervalNanos - beatNanos / 2;
  }

  /** Makes the next tick's round due at once (this worker has just taken the lease). */
  void dueNow() {
    lastRound = System.nanoTime() - intervalNanos;
  }

  @Override
  public PassLock lock() {
    return PassLock.RESCUE;
  }

  /** The round's statements when it is due; null (a renewal only) when not. */
  @Override
  public Round run(DSLContext tx) {
    if (!due()) {
      return null;
    }
    int rescued = rescue.run(tx);
    int repaired = repair.run(tx);
    return new Round(rescued, repaired, MaintenanceQueries.taskTable(tx));
  }

  @Override
  public void committed(Round r, Executor onPool) {
    if (r == null) {
      return;
    }
    lastRound = System.nanoTime();
    rescue.committed(r.rescued(), onPool);
    repair.committed(r.repaired(), onPool);
    vacuum.afterRound(r.table(), onPool);
    analyze.afterRound(r.table(), onPool);
  }
}
