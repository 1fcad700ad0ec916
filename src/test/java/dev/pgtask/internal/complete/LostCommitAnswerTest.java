package dev.pgtask.internal.complete;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.HandlerOptions;
import dev.pgtask.NewTask;
import dev.pgtask.PgTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.FreezingProxy;
import dev.pgtask.testsupport.TestDatabase;
import dev.pgtask.testsupport.WorkerFixture;
import java.net.URI;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A COMMIT whose answer is lost (the server commits, the connection breaks before its reply comes
 * back) is not reported as a failure: the worker reads durable state, finds the tasks done, and
 * counts them completed, alone or in a shared transaction. Nothing runs twice either way.
 */
class LostCommitAnswerTest {

  static final String MARKER = "lost-answer-marker";

  static TestDatabase db;
  static Db sql;
  FreezingProxy proxy;
  HikariDataSource pool;
  PgTaskWorker worker;

  @RegisterExtension
  final WorkerFixture workers = WorkerFixture.on(() -> db, () -> pool);

  @BeforeAll
  static void setUp() throws Exception {
    db = TestDatabase.create("lost_commit_answer");
    sql = new Db(db);
    sql.exec("CREATE TABLE effect (task_id bigint)");
  }

  @AfterAll
  static void tearDown() {
    db.close();
  }

  @BeforeEach
  void start() throws Exception {
    URI u = URI.create(db.fullUrl().substring("jdbc:".length()));
    proxy = FreezingProxy.to(u.getHost(), u.getPort() < 0 ? 5432 : u.getPort());
    HikariConfig c = new HikariConfig();
    // every statement's text (COMMIT included) goes over the wire, so that the proxy can see it
    c.setJdbcUrl("jdbc:postgresql://127.0.0.1:" + proxy.port() + u.getRawPath() + "?"
        + (u.getRawQuery() == null ? "" : u.getRawQuery() + "&") + "prepareThreshold=0");
    c.setMaximumPoolSize(6);
    pool = new HikariDataSource(c);
  }

  @AfterEach
  void stop() throws Exception {
    workers.closeAll(); // before its pool goes
    pool.close();
    proxy.close();
    sql.exec("DELETE FROM pgtask.task; DELETE FROM effect");
  }

  private PgTaskWorker.Builder builder(HandlerOptions options) {
    return workers.builder().concurrency(1).prefetch(20).commitBatch(10, Duration.ofSeconds(2))
        .handler("lost.answer", JsonNode.class, (ctx, p) -> {
          try (Statement st = ctx.connection().createStatement()) {
            st.execute("INSERT INTO effect VALUES (" + ctx.taskId() + ")");
            if (p.path("last").asBoolean()) {
              st.execute("SELECT '" + MARKER + "'"); // the COMMIT after this loses its answer
            }
          }
        }, options);
  }

  /** Runs the kind's first tasks (a kind shares transactions only once it is known to be short). */
  private void warm() {
    List<NewTask> warm = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      warm.add(NewTask.of("lost.answer", Map.of()));
    }
    PgTask.create(pool).enqueueAll(warm);
    await("the kind's first runs").atMost(Duration.ofSeconds(20))
        .until(() -> sql.count("SELECT count(*) FROM pgtask.task WHERE state = 'completed'") == 4);
  }

  private void assertCommittedOnceAndCountedCompleted(int tasks) throws Exception {
    await("the tasks completed").atMost(Duration.ofSeconds(30))
        .until(() -> sql.count("SELECT count(*) FROM pgtask.task WHERE state = 'completed'") == tasks);
    assertThat(proxy.answersLost()).as("COMMIT answers lost (the precondition)").isEqualTo(1);
    assertThat(sql.rows("SELECT id || ' attempt ' || attempt || ' ' || coalesce(errors::text, '') FROM pgtask.task "
        + "WHERE attempt <> 1 OR errors IS NOT NULL")).as("tasks run again or with an error").isEmpty();
    assertThat(sql.count("SELECT count(*) - count(DISTINCT task_id) FROM effect")).as("effects committed twice").isZero();
    await("the worker counts every task completed").atMost(Duration.ofSeconds(10))
        .until(() -> worker.stats().completed() == tasks);
    assertThat(worker.stats().retried() + worker.stats().discarded()).as("attempts counted as failed").isZero();
  }

  @Test
  void aTaskWhoseCommitAnswerIsLostIsCountedCompletedNotFailed() throws Exception {
    worker = workers.start(builder(HandlerOptions.defaults()));
    proxy.loseAnswerAtCommit(MARKER);
    PgTask.create(pool).enqueue(NewTask.of("lost.answer", Map.of("last", true)));
    assertCommittedOnceAndCountedCompleted(1);
  }

  @Test
  void aSharedTransactionWhoseCommitAnswerIsLostCountsItsTasksCompletedNotAbandoned() throws Exception {
    worker = workers.start(builder(HandlerOptions.defaults().withSharedTransaction()));
    warm();
    proxy.loseAnswerAtCommit(MARKER);
    List<NewTask> tasks = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      tasks.add(NewTask.of("lost.answer", Map.of("last", i == 4)));
    }
    PgTask.create(pool).enqueueAll(tasks);
    assertCommittedOnceAndCountedCompleted(9);
  }
}
