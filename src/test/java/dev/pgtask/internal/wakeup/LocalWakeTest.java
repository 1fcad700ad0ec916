package dev.pgtask.internal.wakeup;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.NewTask;
import dev.pgtask.PgTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskOptions;
import dev.pgtask.testsupport.TestDatabase;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * An enqueue that PgTask commits itself wakes the workers of the same JVM over the same DataSource
 * at once, without waiting for its NOTIFY. The worker here cannot hear notifications (its LISTEN
 * connection goes to another database) and polls every ten minutes: whatever starts within
 * seconds was woken in-process.
 */
class LocalWakeTest {

  TestDatabase db;
  TestDatabase elsewhere;
  HikariDataSource pool;
  HikariDataSource otherPool;
  PgTaskWorker worker;
  final Set<String> started = ConcurrentHashMap.newKeySet();

  @BeforeEach
  void startDeafWorker() throws Exception {
    db = TestDatabase.create("localwake");
    elsewhere = TestDatabase.create("localwake_deaf", false);
    pool = db.pool(6);
    otherPool = db.pool(2);
    worker = PgTaskWorker.builder(pool)
        .queues("default", "mail")
        .concurrency(2)
        .pollInterval(Duration.ofMinutes(10))
        .listenConnection(elsewhere::connect)
        .handler("wake.probe", JsonNode.class, (ctx, p) -> started.add(p.get("name").asText()))
        .build()
        .start();
    // the worker claims once at start, once its listener listens; after that only a wake-up makes it claim
    await().atMost(Duration.ofSeconds(10)).until(this::listenerConnected);
    await("the claim at start returned").atMost(Duration.ofSeconds(10)).until(() -> worker.lastClaimAt() != null);
  }

  @AfterEach
  void stop() {
    worker.close();
    otherPool.close();
    pool.close();
    elsewhere.close();
    db.close();
  }

  private boolean listenerConnected() throws Exception {
    try (Connection c = elsewhere.connect();
        java.sql.ResultSet rs = c.createStatement().executeQuery(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                + "AND application_name LIKE 'pgtask listen %'")) {
      rs.next();
      return rs.getInt(1) == 1;
    }
  }

  private static NewTask probe(String name, TaskOptions options) {
    return NewTask.of("wake.probe", java.util.Map.of("name", name), options);
  }

  @Test
  void aSingleEnqueueThroughTheWorkersDataSourceStartsWithoutANotification() {
    PgTask.create(pool).enqueue(probe("local", TaskOptions.defaults()));
    await().atMost(Duration.ofSeconds(5)).until(() -> started.contains("local"));
  }

  @Test
  void aBatchWakesTheWorkerForEachOfItsQueues() {
    PgTask.create(pool).enqueueAll(List.of(
        probe("later", TaskOptions.defaults().withDelay(Duration.ofHours(1))),
        probe("mail", TaskOptions.defaults().withQueue("mail"))));
    await().atMost(Duration.ofSeconds(5)).until(() -> started.contains("mail"));
    assertThat(started).as("the task due in an hour").doesNotContain("later");
  }

  @Test
  void enqueuesTheWorkerCannotSeeCommitWaitForTheNotification() throws Exception {
    // another DataSource object: it may reach another database, so it never wakes this worker
    PgTask.create(otherPool).enqueue(probe("other pool", TaskOptions.defaults()));
    // the caller's transaction: the wake-up would come before the caller's commit
    try (Connection tx = pool.getConnection()) {
      tx.setAutoCommit(false);
      PgTask.create(pool).enqueue(tx, probe("caller's transaction", TaskOptions.defaults()));
      tx.commit();
    }
    // an absence, proved with a bounded wait: a worker that was woken starts a task within milliseconds
    Thread.sleep(2_000); // the bound of the absence above
    assertThat(started).as("tasks started without a notification").isEmpty();

    // the worker is fine: the next in-process wake-up claims everything due
    PgTask.create(pool).enqueue(probe("local", TaskOptions.defaults()));
    await().atMost(Duration.ofSeconds(5))
        .until(() -> started.containsAll(List.of("local", "other pool", "caller's transaction")));
  }

  @Test
  void aWorkerWhoseListenerHasNotConnectedYetIsWokenToo() throws Exception {
    // its LISTEN connection waits for the gate; a cancellation it cannot hear meanwhile is read
    // from pgtask.cancel_request once it connects (CancelRequestTest)
    java.util.concurrent.CountDownLatch gate = new java.util.concurrent.CountDownLatch(1);
    try (PgTaskWorker gated = PgTaskWorker.builder(pool)
        .queues("gated")
        .concurrency(2)
        .pollInterval(Duration.ofMinutes(10))
        .listenConnection(() -> {
          gate.await();
          return elsewhere.connect();
        })
        .handler("wake.probe", JsonNode.class, (ctx, p) -> started.add(p.get("name").asText()))
        .build()
        .start()) {
      await("the claim loop's first pass at start is over").atMost(Duration.ofSeconds(10))
          .until(() -> gated.lastClaimAt() != null);
      PgTask.create(pool).enqueue(probe("gated", TaskOptions.defaults().withQueue("gated")));
      await().atMost(Duration.ofSeconds(5)).until(() -> started.contains("gated"));
      gate.countDown();
    }
  }
}
