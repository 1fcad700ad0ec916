package dev.pgtask.internal.maintenance;

import dev.pgtask.internal.sql.MaintenanceQueries;
import dev.pgtask.internal.sql.Sql;
import java.time.Duration;
import java.util.concurrent.Executor;
import javax.sql.DataSource;

/**
 * ANALYZE of the task table when it holds four times the rows the planner believes and at least a
 * thousand (a backlog arrived into a queue last analyzed empty; see
 * {@link MaintenanceQueries.TaskTableRows#outgrewPlans}), at most once per {@link Config#minInterval}
 * on this worker (the leader, after a rescue round that read the table: {@link #afterRound}). The
 * sessions' kept plans of the statements by task id (the re-lock, the completions) may have been
 * made on the empty table, where reading it whole was cheapest; new statistics make each session
 * plan them again, with its indexes. The claims and the database functions are planned without
 * sequential scans and need none of this (see {@code TaskSql.GENERIC_PLAN}). ANALYZE runs in
 * autocommit, outside the driver's transaction: it is a statement of its own and no pass lock
 * guards it.
 */
public final class AnalyzePass implements MaintenancePass<Boolean> {

  /** {@code minInterval}: at most one ANALYZE per, on this worker. */
  public record Config(Duration minInterval) {
    /** At most one ANALYZE per 15 s. */
    public static final Config DEFAULT = new Config(Duration.ofSeconds(15));

    /** Validates: a positive interval. */
    public Config {
      if (minInterval == null || minInterval.isNegative() || minInterval.isZero()) {
        throw new IllegalArgumentException("analyze pass: a positive interval needed: " + minInterval);
      }
    }
  }

  private final Config config;
  private final DataSource dataSource;
  // System.nanoTime() of the last ANALYZE (0: none yet); written by the thread that runs the pass
  private volatile long lastAnalyze;

  AnalyzePass(Config config, DataSource dataSource) {
    this.config = config;
    this.dataSource = dataSource;
  }

  @Override
  public String name() {
    return "analyze";
  }

  @Override
  public Duration interval() {
    return config.minInterval();
  }

  /** After a rescue round that read {@code table}: an ANALYZE, on the pool, when it outgrew its plans. */
  void afterRound(MaintenanceQueries.TaskTableRows table, Executor onPool) {
    if (table.outgrewPlans()) {
      onPool.execute(this::runOnce);
    }
  }

  /** Returns whether it analyzed (false within the interval of the last ANALYZE). */
  @Override
  public Boolean runOnce() {
    long now = System.nanoTime();
    if (lastAnalyze != 0 && now - lastAnalyze < config.minInterval().toNanos()) {
      return false;
    }
    lastAnalyze = now;
    MaintenanceQueries.analyzeTasks(Sql.using(dataSource));
    return true;
  }
}
