package dev.pgtask.internal.claim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.NewTask;
import dev.pgtask.PgTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.testsupport.Leaks;
import dev.pgtask.testsupport.QueueDatabase;
import dev.pgtask.testsupport.WorkerFixture;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Stopping a worker while a claim is in flight orphans nothing: {@code close()} returns within its
 * shutdown timeout (plus a margin) even when the claim statement is stuck, and once the claim can
 * finish no task is left {@code running} for the stopped worker and no connection stays checked
 * out of its pool.
 *
 * <p>The claim is made to hang by an ACCESS EXCLUSIVE lock on {@code pgtask.task}, taken before
 * the worker starts (a task is already due). The worker's listener never connects (its connection
 * factory waits on a gate), so the only statement waiting for that lock is the claim.
 */
class ProducerStopTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("producer_stop", 4);

  @RegisterExtension
  final WorkerFixture workers = WorkerFixture.on(queue);

  static final Duration SHUTDOWN_TIMEOUT = Duration.ofSeconds(2);
  static final Duration MARGIN = Duration.ofSeconds(5);

  @Test
  void stoppingAWorkerWhileAClaimIsInFlightOrphansNothing() throws Exception {
    queue.sql().exec("DELETE FROM pgtask.task");
    CountDownLatch listenGate = new CountDownLatch(1);
    try (HikariDataSource pool = queue.database().pool(3); Connection locker = queue.database().connect()) {
      long id = PgTask.create(pool).enqueue(NewTask.of("stop.task", null));
      // a pool of its own, closed at the end of the test's block (the test closes the worker itself)
      PgTaskWorker worker = workers.builder(pool).concurrency(1)
          .rescueInterval(Duration.ofMinutes(10)).shutdownTimeout(SHUTDOWN_TIMEOUT)
          .listenConnection(() -> {
            listenGate.await();
            return queue.database().connect();
          })
          .handler("stop.task", JsonNode.class, (ctx, p) -> { })
          .build();
      locker.setAutoCommit(false);
      int lockerPid;
      try (Statement st = locker.createStatement()) {
        st.execute("LOCK TABLE pgtask.task IN ACCESS EXCLUSIVE MODE");
        try (var rs = st.executeQuery("SELECT pg_backend_pid()")) {
          rs.next();
          lockerPid = rs.getInt(1);
        }
      }
      AtomicLong closeMillis = new AtomicLong(-1);
      Thread closer = new Thread(() -> {
        long t0 = System.nanoTime();
        worker.close();
        closeMillis.set(Duration.ofNanos(System.nanoTime() - t0).toMillis());
      }, "producer-stop-closer");
      try {
        worker.start();
        await("the worker's claim waits for the table lock").atMost(Duration.ofSeconds(10)).until(() -> queue.sql().count(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' "
                + "AND pid <> " + lockerPid) >= 1);
        closer.start();
        closer.join(SHUTDOWN_TIMEOUT.plus(MARGIN).toMillis() + 15_000);
      } finally {
        locker.rollback(); // the claim can go on now, if it still exists
        listenGate.countDown();
      }
      closer.join(30_000);
      org.assertj.core.api.SoftAssertions soft = new org.assertj.core.api.SoftAssertions();
      soft.assertThat(closeMillis.get()).as("close() took (ms) with a claim stuck in flight; shutdown timeout "
          + SHUTDOWN_TIMEOUT.toMillis() + " ms").isBetween(0L, SHUTDOWN_TIMEOUT.plus(MARGIN).toMillis());
      // the claim, if it was still waiting, has finished by now: no session of the database waits or runs for it
      await("the stuck claim's statement has ended").atMost(Duration.ofSeconds(10)).until(() -> queue.sql().count(
          "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() "
              + "AND state = 'active'") == 0);
      soft.assertThat(queue.sql().text("SELECT t.state || ' ' || coalesce(k.owner, '-') FROM pgtask.tasks t JOIN pgtask.task k USING (id) "
          + "WHERE id = " + id)).as("the due task after the stopped worker's claim went through").isEqualTo("available -");
      soft.assertThat(queue.sql().count("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
          + "AND state LIKE 'idle in transaction%'")).as("sessions left idle in a transaction after close").isZero();
      soft.assertThat(pool.getHikariPoolMXBean().getActiveConnections()).as("connections checked out of the stopped worker's pool")
          .isZero();
      soft.assertAll();
      Leaks.assertNoAdvisoryLocks(queue.database());
    }
  }
}
