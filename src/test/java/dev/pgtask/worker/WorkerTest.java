package dev.pgtask.worker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.pgtask.DiscardTaskException;
import dev.pgtask.HandlerOptions;
import dev.pgtask.NewTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.RetryTaskException;
import dev.pgtask.SnoozeTaskException;
import dev.pgtask.TaskArgs;
import dev.pgtask.TaskOptions;
import dev.pgtask.testsupport.QueueDatabase;
import dev.pgtask.testsupport.WorkerFixture;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The worker runtime in one JVM against a real server: execution, outcomes, timeouts, shutdown. */
class WorkerTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("worker", 12,
      "CREATE TABLE effect (task_id bigint, attempt int, note text, tenant text, "
          + "started_at timestamptz, finished_at timestamptz)");

  record Note(String text) implements TaskArgs {
    @Override
    public String kind() {
      return "test.note";
    }
  }

  @RegisterExtension
  final WorkerFixture workers = WorkerFixture.on(queue).checkingLeaks(5);

  @BeforeEach
  void clean() throws SQLException {
    exec("DELETE FROM pgtask.task");
    exec("DELETE FROM effect");
  }

  private PgTaskWorker start(PgTaskWorker.Builder b) {
    return workers.start(b);
  }

  private PgTaskWorker.Builder worker() {
    return workers.builder().concurrency(5).pollInterval(Duration.ofMillis(500))
        .retryBackoff(Duration.ofMillis(20), Duration.ofMillis(100));
  }

  @Test
  void handlerEffectsCommitTogetherWithCompletion() throws SQLException {
    start(worker().handler("test.note", Note.class, (ctx, note) -> {
      try (PreparedStatement ps = ctx.connection().prepareStatement(
          "INSERT INTO effect (task_id, attempt, note) VALUES (?, ?, ?)")) {
        ps.setLong(1, ctx.taskId());
        ps.setInt(2, ctx.attempt());
        ps.setString(3, note.text());
        ps.executeUpdate();
      }
    }));
    List<NewTask> tasks = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      tasks.add(NewTask.of(new Note("n" + i)));
    }
    queue.pgtask().enqueueAll(tasks);
    workers.awaitTasks("completed", 200, Duration.ofSeconds(30));
    assertThat(count("SELECT count(*) FROM effect")).as("one effect row per task").isEqualTo(200);
    assertThat(count("SELECT count(DISTINCT task_id) FROM effect")).as("distinct tasks with effects").isEqualTo(200);
    assertThat(count("SELECT count(*) FROM effect e JOIN pgtask.task t ON t.id = e.task_id "
        + "WHERE t.payload->>'text' = e.note")).as("typed payload reached the handler").isEqualTo(200);
  }

  @Test
  void failedAttemptRollsBackItsEffectsAndRetriesWithErrorHistory() throws SQLException {
    start(worker().handler("test.flaky", (ctx, payload) -> {
      exec(ctx.connection(), "INSERT INTO effect (task_id, attempt) VALUES (" + ctx.taskId() + ", " + ctx.attempt() + ")");
      if (ctx.attempt() < 3) {
        throw new IllegalStateException("boom on attempt " + ctx.attempt());
      }
    }));
    long id = queue.pgtask().enqueue(NewTask.of("test.flaky", null));
    workers.awaitState(id, "completed", Duration.ofSeconds(20));
    assertThat(count("SELECT count(*) FROM effect")).as("only the successful attempt's effect survives").isEqualTo(1);
    assertThat(count("SELECT attempt FROM effect")).as("attempt that committed").isEqualTo(3);
    assertThat(count("SELECT jsonb_array_length(errors) FROM pgtask.task WHERE id = " + id)).as("errors recorded").isEqualTo(2);
    assertThat(text("SELECT errors->1->>'error' FROM pgtask.task WHERE id = " + id)).contains("boom on attempt 2");
    assertThat(text("SELECT last_error FROM pgtask.tasks WHERE id = " + id))
        .as("a completed task's last_error: it did not fail in the end").isNull();
  }

  @Test
  void aRetryStartsWhenItsBackoffEndsNotAtTheNextPoll() throws SQLException {
    java.util.Map<Integer, Long> startedAt = new java.util.concurrent.ConcurrentHashMap<>();
    Duration poll = Duration.ofSeconds(5); // the default: a retry found by the poll starts 4.5 to 5 s later
    start(workers.builder().concurrency(2).pollInterval(poll)
        .handler("test.soon_again", (ctx, payload) -> {
          startedAt.put(ctx.attempt(), System.nanoTime());
          if (ctx.attempt() == 1) {
            throw new dev.pgtask.RetryTaskException(Duration.ofMillis(500), "again in half a second");
          }
        }));
    long id = queue.pgtask().enqueue(NewTask.of("test.soon_again", null));
    workers.awaitState(id, "completed", Duration.ofSeconds(20));
    long apartMillis = (startedAt.get(2) - startedAt.get(1)) / 1_000_000;
    assertThat(apartMillis).as("ms between the first attempt and its retry after a 500 ms backoff")
        .isBetween(450L, 2_500L);
  }

  @Test
  void aRetryAtAnInstantRunsAtThatInstantAsGivenNotAsADelayOnTheJvmClock() throws SQLException {
    java.time.Instant at = java.time.Instant.parse("2099-01-02T03:04:05.678901Z");
    start(worker().handler("test.retry_at", (ctx, payload) -> {
      throw dev.pgtask.RetryTaskException.at(at, "later");
    }));
    long id = queue.pgtask().enqueue(NewTask.of("test.retry_at", null));
    workers.awaitState(id, "retryable", Duration.ofSeconds(20));
    assertThat(text("SELECT to_char(run_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US') FROM pgtask.task WHERE id = " + id))
        .isEqualTo("2099-01-02T03:04:05.678901");
  }

  @Test
  void aDeferredConstraintViolationFailsItsAttemptWithItsOwnErrorAndKeepsNeitherEffectsNorCompletion()
      throws SQLException {
    // a check the server would make only at COMMIT (a deferred constraint) is made inside the
    // task's savepoint before its completion: the attempt fails with the violation, under its locks
    exec("CREATE TABLE deferred_guard (task_id bigint UNIQUE DEFERRABLE INITIALLY DEFERRED)");
    try {
      start(worker().handler("test.deferred", (ctx, payload) -> {
        exec(ctx.connection(), "INSERT INTO effect (task_id, attempt) VALUES (" + ctx.taskId() + ", " + ctx.attempt() + ")");
        exec(ctx.connection(), "INSERT INTO deferred_guard VALUES (" + ctx.taskId() + ")");
        if (ctx.attempt() < 3) {
          // a duplicate: allowed until COMMIT, which then fails
          exec(ctx.connection(), "INSERT INTO deferred_guard VALUES (" + ctx.taskId() + ")");
        }
      }));
      long id = queue.pgtask().enqueue(NewTask.of("test.deferred", null));
      workers.awaitState(id, "completed", Duration.ofSeconds(20));
      assertThat(count("SELECT count(*) FROM effect")).as("only the attempt that committed left effects").isEqualTo(1);
      assertThat(count("SELECT attempt FROM effect")).isEqualTo(3);
      assertThat(count("SELECT attempt FROM pgtask.task WHERE id = " + id)).isEqualTo(3);
      assertThat(text("SELECT errors->0->>'error' FROM pgtask.task WHERE id = " + id))
          .contains("deferred_guard").contains("23505").doesNotContain("task transaction failed");
    } finally {
      exec("DROP TABLE deferred_guard");
    }
  }

  @Test
  void exhaustedAttemptsDiscardTheTask() throws SQLException {
    start(worker().handler("test.fail", (ctx, payload) -> {
      throw new RuntimeException("always");
    }));
    long id = queue.pgtask().enqueue(NewTask.of("test.fail", null, TaskOptions.defaults().withMaxAttempts(3)));
    workers.awaitState(id, "discarded", Duration.ofSeconds(20));
    assertThat(count("SELECT attempt FROM pgtask.task WHERE id = " + id)).isEqualTo(3);
    assertThat(count("SELECT jsonb_array_length(errors) FROM pgtask.task WHERE id = " + id)).isEqualTo(3);
    assertThat(count("SELECT count(*) FROM pgtask.tasks WHERE id = " + id + " AND finished_at IS NOT NULL")).isEqualTo(1);
  }

  @Test
  void handlersDecideExplicitly() throws SQLException {
    start(worker()
        .handler("test.discard", (ctx, p) -> {
          throw new DiscardTaskException("not worth retrying");
        })
        .handler("test.retry", (ctx, p) -> {
          throw new RetryTaskException(Duration.ofHours(1), "upstream says later");
        })
        .handler("test.snooze", (ctx, p) -> {
          throw new SnoozeTaskException(Duration.ofHours(2));
        }));
    long discard = queue.pgtask().enqueue(NewTask.of("test.discard", null));
    long retry = queue.pgtask().enqueue(NewTask.of("test.retry", null));
    long snooze = queue.pgtask().enqueue(NewTask.of("test.snooze", null));
    await().atMost(Duration.ofSeconds(10)).until(() -> "discarded".equals(state(discard))
        && "retryable".equals(state(retry)) && "scheduled".equals(state(snooze)));
    assertThat(count("SELECT attempt FROM pgtask.task WHERE id = " + discard)).as("discarded at attempt").isEqualTo(1);
    assertThat(count("SELECT count(*) FROM pgtask.task WHERE id = " + retry
        + " AND run_at BETWEEN now() + interval '59 minutes' AND now() + interval '61 minutes'"))
        .as("retry scheduled by the handler's delay").isEqualTo(1);
    assertThat(count("SELECT count(*) FROM pgtask.task WHERE id = " + snooze
        + " AND run_at > now() + interval '119 minutes' AND errors IS NULL AND max_attempts = 26"))
        .as("snooze: later, no error, the attempt not counted against max_attempts").isEqualTo(1);
  }

  @Test
  void timedOutHandlerIsInterruptedAndRolledBack() throws SQLException {
    AtomicInteger interrupted = new AtomicInteger();
    start(worker().handler("test.slow", com.fasterxml.jackson.databind.JsonNode.class, (ctx, p) -> {
      exec(ctx.connection(), "INSERT INTO effect (task_id, attempt) VALUES (" + ctx.taskId() + ", " + ctx.attempt() + ")");
      try {
        Thread.sleep(60_000); // the task's work: only the timeout's interrupt ends it early
      } catch (InterruptedException e) {
        interrupted.incrementAndGet();
        throw e;
      }
    }, HandlerOptions.defaults().withTimeout(Duration.ofMillis(300))));
    long id = queue.pgtask().enqueue(NewTask.of("test.slow", null, TaskOptions.defaults().withMaxAttempts(1)));
    workers.awaitState(id, "discarded", Duration.ofSeconds(10));
    assertThat(interrupted.get()).as("handler interrupted at its timeout").isEqualTo(1);
    assertThat(text("SELECT last_error FROM pgtask.tasks WHERE id = " + id)).contains("timed out");
    assertThat(count("SELECT count(*) FROM effect")).as("effects of the timed-out attempt").isZero();
  }

  @Test
  void timeoutAlsoStopsAHandlerStuckInTheDatabase() throws SQLException {
    start(worker().handler("test.pgsleep", com.fasterxml.jackson.databind.JsonNode.class,
        (ctx, p) -> exec(ctx.connection(), "SELECT pg_sleep(60)"),
        HandlerOptions.defaults().withTimeout(Duration.ofMillis(300))));
    long id = queue.pgtask().enqueue(NewTask.of("test.pgsleep", null, TaskOptions.defaults().withMaxAttempts(1)));
    workers.awaitState(id, "discarded", Duration.ofSeconds(10));
    assertThat(text("SELECT last_error FROM pgtask.tasks WHERE id = " + id)).contains("timed out");
  }

  @Test
  void gracefulShutdownLetsRunningTasksFinish() throws SQLException {
    PgTaskWorker w = start(worker().handler("test.sleep", (ctx, p) -> Thread.sleep(400))); // the task's work, shorter than the shutdown timeout
    List<NewTask> tasks = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      tasks.add(NewTask.of("test.sleep", null));
    }
    queue.pgtask().enqueueAll(tasks);
    workers.awaitTasks("running", 5, Duration.ofSeconds(10));
    w.close();
    assertThat(count("SELECT count(*) FROM pgtask.tasks WHERE state = 'completed'"))
        .as("tasks running at shutdown finished within the shutdown timeout").isEqualTo(5);
  }

  @Test
  void shutdownDeadlineInterruptsRollsBackAndReleasesTasks() throws SQLException {
    PgTaskWorker w = start(worker().shutdownTimeout(Duration.ofMillis(200)).handler("test.long", (ctx, p) -> {
      exec(ctx.connection(), "INSERT INTO effect (task_id, attempt) VALUES (" + ctx.taskId() + ", " + ctx.attempt() + ")");
      Thread.sleep(60_000); // the task's work: only the shutdown deadline's interrupt ends it early
    }));
    List<NewTask> tasks = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      tasks.add(NewTask.of("test.long", null));
    }
    queue.pgtask().enqueueAll(tasks);
    workers.awaitTasks("running", 5, Duration.ofSeconds(10));
    long started = System.nanoTime();
    w.close();
    assertThat(Duration.ofNanos(System.nanoTime() - started)).as("shutdown time").isLessThan(Duration.ofSeconds(8));
    assertThat(count("SELECT count(*) FROM pgtask.tasks WHERE state = 'available' AND attempt = 0"))
        .as("every task back to available with its attempt given back").isEqualTo(8);
    assertThat(count("SELECT count(*) FROM effect")).as("effects of interrupted tasks").isZero();
    assertThat(count("SELECT count(*) FROM pgtask.task WHERE owner IS NOT NULL")).as("claims left").isZero();
  }

  @Test
  void tasksOfOneTenantNeverOverlap() throws SQLException {
    start(worker().concurrency(5).handler("test.tenant", (ctx, p) -> {
      exec(ctx.connection(), "INSERT INTO effect (task_id, attempt, tenant, started_at) VALUES ("
          + ctx.taskId() + ", " + ctx.attempt() + ", '" + ctx.tenant() + "', clock_timestamp())");
      Thread.sleep(15); // the task's work: long enough for two tasks of a tenant to overlap, were they allowed to
      exec(ctx.connection(), "UPDATE effect SET finished_at = clock_timestamp() WHERE task_id = " + ctx.taskId());
    }));
    List<NewTask> tasks = new ArrayList<>();
    for (int i = 0; i < 60; i++) {
      tasks.add(NewTask.of("test.tenant", null, TaskOptions.defaults().withTenant("t" + (i % 3))));
    }
    queue.pgtask().enqueueAll(tasks);
    workers.awaitTasks("completed", 60, Duration.ofSeconds(30));
    assertThat(count("SELECT count(*) FROM effect")).isEqualTo(60);
    assertThat(count("SELECT count(*) FROM effect a JOIN effect b ON a.tenant = b.tenant AND a.task_id < b.task_id "
        + "AND tstzrange(a.started_at, a.finished_at) && tstzrange(b.started_at, b.finished_at)"))
        .as("overlapping executions of one tenant").isZero();
    assertThat(count("SELECT count(DISTINCT tenant) FROM effect")).isEqualTo(3);
  }

  @Test
  void poolSmallerThanConcurrencyIsRejectedAtBuild() {
    assertThatThrownBy(() -> PgTaskWorker.builder(queue.pool()).concurrency(20).handler("x", (c, p) -> { }).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("pool has 12 connections")
        .hasMessageContaining("concurrency 20");
  }

  @Test
  void badSettingsAreRejectedAtBuild() {
    assertThatThrownBy(() -> PgTaskWorker.builder(queue.pool()).queues("bad queue").batchSize(0)
        .handler("x", (c, p) -> { }).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("batchSize")
        .hasMessageContaining("queue 'bad queue'");
    assertThatThrownBy(() -> PgTaskWorker.builder(queue.pool()).build())
        .hasMessageContaining("no handlers");
  }

  // ---- helpers ----

  static void exec(String sql) throws SQLException {
    try (Connection c = queue.pool().getConnection()) {
      exec(c, sql);
    }
  }

  static void exec(Connection c, String sql) throws SQLException {
    try (Statement st = c.createStatement()) {
      st.execute(sql);
    }
  }

  static long count(String sql) throws SQLException {
    try (Connection c = queue.pool().getConnection(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      return rs.next() ? rs.getLong(1) : -1;
    }
  }

  static String text(String sql) throws SQLException {
    try (Connection c = queue.pool().getConnection(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      return rs.next() ? rs.getString(1) : null;
    }
  }

  static String state(long id) throws SQLException {
    return text("SELECT state FROM pgtask.tasks WHERE id = " + id);
  }
}
