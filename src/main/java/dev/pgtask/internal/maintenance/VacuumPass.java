package dev.pgtask.internal.maintenance;

import dev.pgtask.internal.sql.MaintenanceQueries;
import dev.pgtask.internal.sql.Sql;
import java.time.Duration;
import java.util.concurrent.Executor;
import javax.sql.DataSource;
import org.jooq.DSLContext;

/**
 * VACUUM of the task table when it has {@link Config#deadTuples} dead row versions or more and no
 * worker vacuumed it within {@link Config#minInterval}: a busy queue outruns autovacuum's defaults,
 * and some servers run with autovacuum off. The turn is claimed with a short UPDATE of
 * pgtask.settings in the driver's transaction (one worker per interval in the cluster); VACUUM
 * itself runs in autocommit once that committed. The leader takes a turn after a rescue round that
 * read that many dead row versions ({@link #afterRound}).
 */
public final class VacuumPass implements MaintenancePass<Boolean>, PassStatements<Boolean> {

  /** {@code deadTuples}: the dead row versions that call for a vacuum; {@code minInterval}: at most one vacuum per. */
  public record Config(long deadTuples, Duration minInterval) {
    /** The defaults: 20,000 dead row versions, at most one vacuum per 15 s. */
    public static final Config DEFAULT = new Config(20_000, Duration.ofSeconds(15));

    /** Validates: positive values. */
    public Config {
      if (deadTuples < 1 || minInterval == null || minInterval.isNegative() || minInterval.isZero()) {
        throw new IllegalArgumentException("vacuum pass: positive values needed: " + deadTuples + ", " + minInterval);
      }
    }
  }

  private final Config config;
  private final DataSource dataSource;
  private final PassTransaction tx;

  VacuumPass(Config config, DataSource dataSource, PassTransaction tx) {
    this.config = config;
    this.dataSource = dataSource;
    this.tx = tx;
  }

  @Override
  public String name() {
    return "vacuum";
  }

  @Override
  public Duration interval() {
    return config.minInterval();
  }

  /** Claims the turn: true for the one worker whose update moved it forward. */
  @Override
  public Boolean run(DSLContext t) {
    return MaintenanceQueries.takeVacuumTurn(t, config.minInterval());
  }

  /** With the turn: VACUUM, in autocommit, on the pool. */
  @Override
  public void committed(Boolean turn, Executor onPool) {
    if (turn) {
      // a role that does not own the table gets a server WARNING and no VACUUM: autovacuum remains
      onPool.execute(() -> MaintenanceQueries.vacuumTasks(Sql.using(dataSource)));
    }
  }

  /** After a rescue round that read {@code table}: a turn, on the pool, when its dead row versions are many. */
  void afterRound(MaintenanceQueries.TaskTableRows table, Executor onPool) {
    if (table.dead() >= config.deadTuples()) {
      onPool.execute(() -> tx.onPool(PassTransaction.Fence.ANY, this));
    }
  }

  /** Reads the dead row versions first; returns whether this worker vacuumed. */
  @Override
  public Boolean runOnce() {
    if (MaintenanceQueries.deadTuples(Sql.using(dataSource)) < config.deadTuples()) {
      return false;
    }
    return Boolean.TRUE.equals(tx.onPool(PassTransaction.Fence.ANY, this));
  }
}
