package dev.pgtask.pooler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.NewTask;
import dev.pgtask.PgTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskOptions;
import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.PgBouncer;
import dev.pgtask.testsupport.PgBouncer.Mode;
import dev.pgtask.testsupport.TestDatabase;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A worker's {@code close()} returns within its shutdown timeout plus the 5-s stop allowance even
 * when the database stops answering while tasks run: the pool's PgBouncer is frozen (SIGSTOP), so
 * the running statements, their cancel requests, the rollbacks, the put-back of the tasks and the
 * registry's row all wait on sockets that never answer. The worker's LISTEN connection is direct.
 */
class ShutdownBoundTest {

  private static TestDatabase db;

  @BeforeAll
  static void database() {
    PgBouncer.requireBinary();
    db = TestDatabase.create("pooler_shutdown_bound");
  }

  @AfterAll
  static void drop() {
    if (db != null) {
      db.close();
    }
  }

  @Test
  void closeReturnsWithinTheShutdownTimeoutAndItsAllowanceWhenTheDatabaseStopsAnswering() throws Exception {
    try (PgBouncer b = PgBouncer.start(db, Mode.SESSION, 6)) {
      HikariConfig c = new HikariConfig();
      c.setJdbcUrl(b.fullUrl());
      c.setMaximumPoolSize(4);
      c.setMinimumIdle(0);
      c.setConnectionTimeout(30_000);
      try (HikariDataSource pool = new HikariDataSource(c)) {
        PgTaskWorker worker = PgTaskWorker.builder(pool).concurrency(2).queues("hang").listenUrl(db.fullUrl())
            .shutdownTimeout(Duration.ofSeconds(2))
            .handler("sb.sleep", (ctx, p) -> ctx.dsl().execute("SELECT pg_sleep(120)")).build().start();
        PgTask pgtask = PgTask.create(db.dataSource());
        for (int i = 0; i < 2; i++) {
          pgtask.enqueue(NewTask.of("sb.sleep", Map.of(), TaskOptions.defaults().withQueue("hang")));
        }
        Db sql = new Db(db);
        await().atMost(Duration.ofSeconds(30)).until(() ->
            sql.count("SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(120)' AND state = 'active'") == 2);
        b.freeze();
        long started = System.nanoTime();
        worker.close();
        Duration took = Duration.ofNanos(System.nanoTime() - started);
        System.out.println("close() with the pooler frozen took " + took.toMillis() + " ms");
        assertThat(took).as("close() with a 2-s shutdown timeout and the database not answering")
            .isLessThan(Duration.ofSeconds(2 + 5).plusMillis(1500));
        b.thaw();
        // the aborted sessions end at the server: the interrupted attempts leave no running statement behind
        sql.exec("SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(120)'");
      }
    }
  }
}
