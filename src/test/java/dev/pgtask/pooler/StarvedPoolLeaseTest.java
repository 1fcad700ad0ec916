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
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A claimed task that waits for a connection its worker's pool cannot give is never rescued from
 * that live worker: its lease is renewed on the worker's own LISTEN session, not through the
 * starved pool. The pool goes through a session-mode PgBouncer with two server sessions, both
 * held by running tasks; the worker has more claimed tasks waiting (prefetch), and a second worker
 * with a direct pool leads maintenance and rescues whatever lease runs out.
 */
class StarvedPoolLeaseTest {

  private static TestDatabase db;

  @BeforeAll
  static void database() {
    PgBouncer.requireBinary();
    db = TestDatabase.create("pooler_starved_lease");
  }

  @AfterAll
  static void drop() {
    if (db != null) {
      db.close();
    }
  }

  @Test
  void claimedTasksWaitingForAStarvedPoolKeepTheirLeaseWhileTheirWorkerLives() throws Exception {
    Db sql = new Db(db);
    CountDownLatch release = new CountDownLatch(1);
    AtomicInteger running = new AtomicInteger();
    // the rescuer: direct pool, another queue, maintenance every half second; it starts first and leads
    try (PgTaskWorker rescuer = PgTaskWorker.builder(db.dataSource()).queues("elsewhere").concurrency(1)
        .leaseDuration(Duration.ofSeconds(3)).rescueInterval(Duration.ofMillis(500))
        .handler("sl.other", (ctx, p) -> { }).build().start()) {
      await().atMost(Duration.ofSeconds(30)).until(() ->
          sql.count("SELECT count(*) FROM pgtask.maintenance_lease WHERE holder = '" + rescuer.workerId() + "'") == 1);
      HikariConfig c = new HikariConfig();
      try (PgBouncer b = PgBouncer.start(db, Mode.SESSION, 2)) {
        c.setJdbcUrl(b.fullUrl());
        c.setMaximumPoolSize(5);
        c.setMinimumIdle(0);
        try (HikariDataSource pool = new HikariDataSource(c)) {
          PgTaskWorker starved = PgTaskWorker.builder(pool).queues("starved").concurrency(3).prefetch(4)
              .listenUrl(db.fullUrl()).leaseDuration(Duration.ofSeconds(3)).shutdownTimeout(Duration.ofSeconds(1))
              .handler("sl.hold", (ctx, p) -> {
                ctx.dsl().execute("SELECT 1");
                running.incrementAndGet();
                release.await(60, TimeUnit.SECONDS);
              }).build().start();
          try {
            PgTask pgtask = PgTask.create(db.dataSource());
            // in one statement: one notification, and a claim that finds all six before the pooler's
            // two sessions are taken by running tasks (later claims would wait for a session)
            java.util.List<NewTask> six = new java.util.ArrayList<>();
            for (int i = 0; i < 6; i++) {
              six.add(NewTask.of("sl.hold", Map.of(), TaskOptions.defaults().withQueue("starved")));
            }
            pgtask.enqueueAll(six);
            // two run and hold the pooler's two sessions; the others are claimed and wait for a connection
            await().atMost(Duration.ofSeconds(30)).until(() -> running.get() == 2);
            await().atMost(Duration.ofSeconds(30)).until(() ->
                sql.count("SELECT count(*) FROM pgtask.task WHERE state = 'running' AND owner = '"
                    + starved.workerId() + "'") >= 3);
            // four leases (12 s) later, with a rescue every half second: no task was taken from the live worker
            await().during(Duration.ofSeconds(12)).atMost(Duration.ofSeconds(20)).until(() ->
                sql.count("SELECT count(*) FROM pgtask.task WHERE errors::text LIKE '%worker lost%'") == 0);
          } finally {
            release.countDown();
            starved.close();
          }
        }
      }
    }
  }
}
