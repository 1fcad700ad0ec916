package dev.pgtask.pooler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.NewTask;
import dev.pgtask.PgTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskOptions;
import dev.pgtask.testsupport.PgBouncer;
import dev.pgtask.testsupport.PgBouncer.Mode;
import dev.pgtask.testsupport.TestDatabase;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A worker behind PgBouncer in session mode whose pool has more connections than PgBouncer has
 * server sessions for it: it says so, and its shutdown keeps its timeout although a connection
 * waits for a session that never comes.
 */
class SessionPoolerTest {

  private static TestDatabase db;

  @BeforeAll
  static void database() {
    PgBouncer.requireBinary();
    db = TestDatabase.create("pooler_session");
  }

  @AfterAll
  static void drop() {
    if (db != null) {
      db.close();
    }
  }

  private static HikariDataSource pool(String url, int size) {
    HikariConfig c = new HikariConfig();
    c.setJdbcUrl(url);
    c.setMaximumPoolSize(size);
    c.setMinimumIdle(0);
    return new HikariDataSource(c);
  }

  /** Runs {@code body} with slf4j-simple's output (System.err) also captured. */
  private static String capturingLog(ThrowingRunnable body) throws Exception {
    PrintStream original = System.err;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    PrintStream both = new PrintStream(new java.io.OutputStream() {
      @Override
      public void write(int b) {
        captured.write(b);
        original.write(b);
      }

      @Override
      public void write(byte[] b, int off, int len) {
        captured.write(b, off, len);
        original.write(b, off, len);
      }
    }, true, StandardCharsets.UTF_8);
    System.setErr(both);
    try {
      body.run(() -> captured.toString(StandardCharsets.UTF_8));
    } finally {
      System.setErr(original);
    }
    return captured.toString(StandardCharsets.UTF_8);
  }

  interface ThrowingRunnable {
    void run(java.util.function.Supplier<String> logSoFar) throws Exception;
  }

  @Test
  void aWorkerWhosePoolOutgrowsASessionPoolersServerSessionsWarnsWithTheNumbers() throws Exception {
    try (PgBouncer b = PgBouncer.start(db, Mode.SESSION, 2); HikariDataSource pool = pool(b.fullUrl(), 5)) {
      String log = capturingLog(logSoFar -> {
        PgTaskWorker worker = PgTaskWorker.builder(pool).concurrency(3).queues("warn").listenUrl(db.fullUrl())
            .shutdownTimeout(Duration.ofSeconds(2))
            .handler("sp.noop", (ctx, p) -> { }).build().start();
        try {
          await().atMost(Duration.ofSeconds(30)).until(() -> logSoFar.get().contains("gave only"));
        } finally {
          worker.close();
        }
      });
      assertThat(log).contains("gave only 2 of the 4 connections it needs at once (concurrency 3 + 1")
          .contains("session pooler").contains("default_pool_size");
    }
  }

  @Test
  void aPoolThatFitsTheSessionPoolerGivesNoWarning() throws Exception {
    try (PgBouncer b = PgBouncer.start(db, Mode.SESSION, 6); HikariDataSource pool = pool(b.fullUrl(), 5)) {
      AtomicInteger ran = new AtomicInteger();
      String log = capturingLog(logSoFar -> {
        PgTaskWorker worker = PgTaskWorker.builder(pool).concurrency(3).queues("fits").listenUrl(db.fullUrl())
            .handler("sp.count", (ctx, p) -> ran.incrementAndGet()).build().start();
        try {
          PgTask.create(db.dataSource()).enqueue(NewTask.of("sp.count", Map.of(), TaskOptions.defaults().withQueue("fits")));
          await().atMost(Duration.ofSeconds(20)).until(() -> ran.get() == 1);
          // the check borrows 4 connections, each answering at once, on a thread of its own: it has
          // finished (and logged any warning) once that thread has ended
          String checkThread = "pgtask-capacity-" + worker.workerId();
          await("the pool capacity check finishes").atMost(Duration.ofSeconds(3)).until(() -> Thread.getAllStackTraces()
              .keySet().stream().noneMatch(t -> t.getName().equals(checkThread)));
        } finally {
          worker.close();
        }
      });
      assertThat(log).doesNotContain("gave only").doesNotContain("receives no notifications");
    }
  }

  @Test
  void shutdownKeepsItsTimeoutWhileAConnectionWaitsForASessionThatNeverComes() throws Exception {
    try (PgBouncer b = PgBouncer.start(db, Mode.SESSION, 2); HikariDataSource pool = pool(b.fullUrl(), 4)) {
      AtomicInteger running = new AtomicInteger();
      PgTaskWorker worker = PgTaskWorker.builder(pool).concurrency(3).queues("stop").listenUrl(db.fullUrl())
          .shutdownTimeout(Duration.ofSeconds(3))
          .handler("sp.hold", (ctx, p) -> {
            ctx.dsl().execute("SELECT 1");
            running.incrementAndGet();
            Thread.sleep(120_000); // the task's work: only the shutdown's interrupt ends it
          }).build().start();
      PgTask pgtask = PgTask.create(db.dataSource());
      for (int i = 0; i < 3; i++) {
        pgtask.enqueue(NewTask.of("sp.hold", Map.of(), TaskOptions.defaults().withQueue("stop")));
      }
      // two hold PgBouncer's two sessions; the third task waits for a connection that has none
      await().atMost(Duration.ofSeconds(30)).until(() -> running.get() == 2);
      long started = System.nanoTime();
      worker.close();
      Duration took = Duration.ofNanos(System.nanoTime() - started);
      System.out.println("close() behind a full session pooler took " + took.toMillis() + " ms");
      // the 3 s, then at most the 5-s stop allowance: the connection waiting for a session is aborted
      assertThat(took).as("close() with a 3 s shutdown timeout").isLessThan(Duration.ofSeconds(3 + 5).plusMillis(500));
    }
  }
}
