package dev.pgtask.internal.maintenance;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.internal.maintenance.Maintenance;
import dev.pgtask.internal.maintenance.RetentionPass;
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
      Maintenance maintenance = Maintenance.standalone(dev.pgtask.internal.WorkerAccess.config(w));
      assertThat(maintenance.runNow(RetentionPass.class)).as("tasks deleted by one pass").isEqualTo(12_010);
      assertThat(sql.rows("SELECT kind || ' ' || count(*) FROM pgtask.task GROUP BY kind ORDER BY kind"))
          .containsExactly("r.failed2d 10", "r.new 10", "r.queued 10");
      assertThat(maintenance.runNow(RetentionPass.class)).as("a second pass finds nothing").isZero();
    }
  }

  @Test
  void retentionRemovesATasksAttemptHistoryWithTheTask() throws Exception {
    try (TestDatabase db = TestDatabase.create("retention_history"); HikariDataSource pool = db.pool(4)) {
      Db sql = new Db(db);
      sql.exec("SELECT pgtask.enqueue('r.old') FROM generate_series(1, 3)");
      sql.exec("SELECT pgtask.enqueue('r.recent')");
      sql.exec("INSERT INTO pgtask.task_attempt (task_id, attempt, outcome, error) "
          + "SELECT id, a, 'failed', 'boom' FROM pgtask.task, generate_series(1, 2) a");
      sql.exec("UPDATE pgtask.task SET state = 'discarded', finished_at = now() - interval '10 days' WHERE kind = 'r.old'");
      sql.exec("UPDATE pgtask.task SET state = 'discarded', finished_at = now() WHERE kind = 'r.recent'");
      PgTaskWorker w = PgTaskWorker.builder(pool).concurrency(2).retention(Duration.ofMinutes(30), Duration.ofDays(7))
          .handler("x", (c, p) -> { }).build();
      assertThat(Maintenance.standalone(dev.pgtask.internal.WorkerAccess.config(w)).runNow(RetentionPass.class))
          .as("tasks deleted").isEqualTo(3);
      assertThat(sql.rows("SELECT t.kind || ' ' || count(*) FROM pgtask.task_attempt a JOIN pgtask.task t ON t.id = a.task_id "
          + "GROUP BY t.kind")).as("attempt history left, by kind").containsExactly("r.recent 2");
      assertThat(sql.count("SELECT count(*) FROM pgtask.task_attempt")).as("history rows left in all").isEqualTo(2);
    }
  }

  @Test
  void aShortRetentionIsEnforcedEveryHalfOfIt() throws Exception {
    try (TestDatabase db = TestDatabase.create("retention_short"); HikariDataSource pool = db.pool(4)) {
      Db sql = new Db(db);
      dev.pgtask.PgTask pgtask = dev.pgtask.PgTask.create(pool);
      try (PgTaskWorker w = PgTaskWorker.builder(pool).concurrency(2).retention(Duration.ofSeconds(2), Duration.ofSeconds(4))
          .handler("r.short", (c, p) -> { }).build().start()) {
        for (int i = 0; i < 20; i++) {
          pgtask.enqueue(dev.pgtask.NewTask.of("r.short", null));
        }
        org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10))
            .until(() -> sql.count("SELECT count(*) FROM pgtask.task WHERE state = 'completed'") == 20);
        long completedAt = System.nanoTime();
        // every second (half of the 2-s retention): gone by about 3 s after completion; a 30-s
        // pass would first run 15 to 30 s after the worker started
        org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(8))
            .until(() -> sql.count("SELECT count(*) FROM pgtask.task") == 0);
        assertThat(Duration.ofNanos(System.nanoTime() - completedAt)).as("time from completion to deletion")
            .isGreaterThanOrEqualTo(Duration.ofMillis(1_000));
      }
    }
  }
}
