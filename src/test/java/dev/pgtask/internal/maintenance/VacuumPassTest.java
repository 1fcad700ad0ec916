package dev.pgtask.internal.maintenance;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.internal.maintenance.Maintenance;
import dev.pgtask.internal.maintenance.VacuumPass;
import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/**
 * The task table is vacuumed by the workers when it holds many dead row versions (autovacuum may
 * be off, as on the machine this was written on, or too slow), by one worker per interval.
 */
class VacuumPassTest {

  @Test
  void oneOfSeveralWorkersVacuumsATableFullOfDeadRowsAndTheDeadRowsGo() throws Exception {
    try (TestDatabase db = TestDatabase.create("vacuum"); HikariDataSource pool = db.pool(8)) {
      Db sql = new Db(db);
      // autovacuum off for the task table, as on a machine where the workers' pass is what vacuums:
      // an autovacuum ANALYZE of the 30,000 deleted rows running beside the pass's VACUUM held its
      // snapshot, the VACUUM could remove nothing and no second one came (a CI run)
      sql.exec("ALTER TABLE pgtask.task SET (autovacuum_enabled = false)");
      sql.exec("SELECT pgtask.enqueue('v.task') FROM generate_series(1, 30000)");
      sql.exec("DELETE FROM pgtask.task");
      // the statistics collector reports the dead rows a moment later
      await().atMost(Duration.ofSeconds(20)).until(() -> sql.count(
          "SELECT n_dead_tup FROM pg_stat_user_tables WHERE relid = 'pgtask.task'::regclass") >= 20_000);

      PgTaskWorker w = PgTaskWorker.builder(pool).concurrency(2).handler("x", (c, p) -> { }).build();
      List<Callable<Boolean>> passes = new ArrayList<>();
      for (int i = 0; i < 4; i++) {
        Maintenance m = Maintenance.standalone(dev.pgtask.internal.WorkerAccess.config(w));
        passes.add(() -> m.runNow(VacuumPass.class));
      }
      ExecutorService threads = Executors.newFixedThreadPool(4);
      int vacuumed = 0;
      for (Future<Boolean> f : threads.invokeAll(passes)) {
        vacuumed += f.get() ? 1 : 0;
      }
      threads.shutdown();
      assertThat(vacuumed).as("workers that vacuumed in one interval").isEqualTo(1);
      await().atMost(Duration.ofSeconds(20)).until(() -> sql.count(
          "SELECT n_dead_tup FROM pg_stat_user_tables WHERE relid = 'pgtask.task'::regclass") < 1_000);
      assertThat(sql.count("SELECT vacuum_count + autovacuum_count FROM pg_stat_user_tables "
          + "WHERE relid = 'pgtask.task'::regclass")).as("vacuums of the task table").isGreaterThanOrEqualTo(1);
    }
  }
}
