package dev.pgtask.worker;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.internal.WorkerStats;
import dev.pgtask.internal.maintenance.Maintenance;
import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.TestDatabase;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** Finished tasks leave the table after their retention, in batches, and nothing else does. */
class RetentionTest {

  @Test
  void retentionDeletesOnlyFinishedTasksPastTheirRetentionInAsManyBatchesAsNeeded() throws Exception {
    try (TestDatabase db = TestDatabase.create("retention"); HikariDataSource pool = db.pool(4)) {
      Db sql = new Db(db);
      // 12,000 completed an hour ago (more than two batches), 10 completed just now, 10 discarded
      // two days ago, 10 discarded ten days ago, 10 still queued with an old run_at
      sql.exec("SELECT pgtask.enqueue('r.old') FROM generate_series(1, 12000)");
      sql.exec("UPDATE pgtask.task SET state = 'completed', finished_at = now() - interval '1 hour' WHERE kind = 'r.old'");
      sql.exec("SELECT pgtask.enqueue('r.new') FROM generate_series(1, 10)");
      sql.exec("UPDATE pgtask.task SET state = 'completed', finished_at = now() WHERE kind = 'r.new'");
      sql.exec("SELECT pgtask.enqueue('r.failed2d') FROM generate_series(1, 10)");
      sql.exec("UPDATE pgtask.task SET state = 'discarded', finished_at = now() - interval '2 days' WHERE kind = 'r.failed2d'");
      sql.exec("SELECT pgtask.enqueue('r.failed10d') FROM generate_series(1, 10)");
      sql.exec("UPDATE pgtask.task SET state = 'discarded', finished_at = now() - interval '10 days' WHERE kind = 'r.failed10d'");
      sql.exec("SELECT pgtask.enqueue('r.queued', run_at => now() - interval '30 days') FROM generate_series(1, 10)");

      PgTaskWorker w = PgTaskWorker.builder(pool).concurrency(2).retention(Duration.ofMinutes(30), Duration.ofDays(7))
          .handler("x", (c, p) -> { }).build();
      Maintenance maintenance = new Maintenance(w.config().withTenantLockNamespace(PgTaskWorker.DEFAULT_TENANT_LOCK_NAMESPACE),
          new WorkerStats(), () -> { }, () -> { });
      assertThat(maintenance.prunePass()).as("tasks deleted by one pass").isEqualTo(12_010);
      assertThat(sql.rows("SELECT kind || ' ' || count(*) FROM pgtask.task GROUP BY kind ORDER BY kind"))
          .containsExactly("r.failed2d 10", "r.new 10", "r.queued 10");
      assertThat(maintenance.prunePass()).as("a second pass finds nothing").isZero();
    }
  }
}
