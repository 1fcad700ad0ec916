package dev.pgtask;

import static dev.pgtask.SqlEnqueueTest.PAYLOAD_MARKER;
import static dev.pgtask.SqlEnqueueTest.queryLong;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.pgtask.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** The Java producer API: single, batch, inside the caller's transaction, typed payloads, bad input. */
class JavaEnqueueTest {

  /** A typed payload. */
  record SendInvoice(long invoiceId, String customer) implements TaskArgs {
    @Override
    public String kind() {
      return "invoice.send";
    }
  }

  private static TestDatabase db;
  private static PgTask pgtask;

  @BeforeAll
  static void createDatabase() {
    db = TestDatabase.create("java_enqueue");
    pgtask = PgTask.create(db.dataSource());
  }

  @AfterAll
  static void dropDatabase() {
    db.close();
  }

  // ---- single and batch, own transaction ----

  @Test
  void enqueueStoresTheTaskWithItsOptions() throws Exception {
    long id = pgtask.enqueue(NewTask.of("report.build", Map.of("month", "2026-01"),
        TaskOptions.defaults().withQueue("reports").withTenant("acme").withPriority(7).withMaxAttempts(4)
            .withDedupeKey("report-2026-01")));
    Map<String, Object> row = row(id);
    assertThat(row).as("stored task").containsEntry("kind", "report.build")
        .containsEntry("payload", "{\"month\": \"2026-01\"}")
        .containsEntry("queue", "reports")
        .containsEntry("tenant", "acme")
        .containsEntry("state", "available")
        .containsEntry("priority", 7)
        .containsEntry("max_attempts", 4)
        .containsEntry("dedupe_key", "report-2026-01");
  }

  @Test
  void typedRecordPayloadIsStoredAsAJsonObjectUnderItsKind() throws Exception {
    long id = pgtask.enqueue(new SendInvoice(42, "Zoë"));
    Map<String, Object> row = row(id);
    assertThat(row.get("kind")).as("kind of a typed task comes from TaskArgs.kind()").isEqualTo("invoice.send");
    assertThat(row.get("payload")).as("the record's components, and not its kind, form the payload")
        .isEqualTo("{\"customer\": \"Zoë\", \"invoiceId\": 42}");
    assertThat(row.get("queue")).as("queue of a task enqueued with default options").isEqualTo("default");
  }

  @Test
  void enqueueAllStoresEveryTaskAndReturnsIdsInInputOrder() throws Exception {
    List<NewTask> tasks = List.of(
        NewTask.of("a", Map.of("n", 1)),
        NewTask.of(new SendInvoice(2, "b"), TaskOptions.defaults().withQueue("billing")),
        NewTask.of("c", "{\"n\": 3}", TaskOptions.defaults().withTenant("acme")));
    List<Long> ids = pgtask.enqueueAll(tasks);
    assertThat(ids).as("one id per task").hasSize(3).doesNotHaveDuplicates();
    assertThat(row(ids.get(0)).get("kind")).as("kind of task 1").isEqualTo("a");
    assertThat(row(ids.get(1))).as("task 2").containsEntry("kind", "invoice.send").containsEntry("queue", "billing");
    assertThat(row(ids.get(2))).as("task 3").containsEntry("kind", "c").containsEntry("tenant", "acme")
        .containsEntry("payload", "{\"n\": 3}");
    assertThat(pgtask.enqueueAll(List.of())).as("ids of an empty batch").isEmpty();
  }

  @Test
  void enqueueAllOfTenThousandTasksStoresThemAll() throws Exception {
    List<NewTask> tasks = new ArrayList<>();
    for (int i = 0; i < 10_000; i++) {
      tasks.add(NewTask.of("bulk", Map.of("i", i), TaskOptions.defaults().withQueue("bulk")));
    }
    List<Long> ids = pgtask.enqueueAll(tasks);
    assertThat(ids).as("ids of a 10,000-task batch").hasSize(10_000).doesNotHaveDuplicates();
    try (Connection c = db.connect()) {
      assertThat(queryLong(c, "SELECT count(*) FROM pgtask.task WHERE queue = 'bulk'")).as("stored tasks").isEqualTo(10_000);
      assertThat(queryLong(c, "SELECT (payload->>'i')::int FROM pgtask.task WHERE id = " + ids.get(1234)))
          .as("payload of the task whose id came back at position 1234").isEqualTo(1234);
    }
  }

  // ---- inside the caller's transaction ----

  @Test
  void enqueueOnTheCallersConnectionExistsOnlyIfTheCallerCommits() throws Exception {
    long committed;
    long rolledBack;
    List<Long> committedBatch;
    List<Long> rolledBackBatch;
    try (Connection tx = db.connect()) {
      tx.setAutoCommit(false);
      committed = pgtask.enqueue(tx, NewTask.of("tx.commit", Map.of()));
      committedBatch = pgtask.enqueueAll(tx, List.of(NewTask.of("tx.commit", Map.of()), NewTask.of("tx.commit", Map.of())));
      assertThat(exists(committed)).as("another connection sees the task before the commit").isFalse();
      assertThat(tx.getAutoCommit()).as("the caller's connection is left in its transaction").isFalse();
      tx.commit();

      rolledBack = pgtask.enqueue(tx, new SendInvoice(1, "x"));
      rolledBackBatch = pgtask.enqueueAll(tx, List.of(NewTask.of("tx.rollback", Map.of())));
      tx.rollback();
    }
    assertThat(exists(committed)).as("task enqueued in a committed transaction exists").isTrue();
    assertThat(committedBatch).as("batch enqueued in a committed transaction exists").allMatch(JavaEnqueueTest::exists);
    assertThat(exists(rolledBack)).as("task enqueued in a rolled-back transaction exists").isFalse();
    assertThat(rolledBackBatch).as("batch enqueued in a rolled-back transaction exists").noneMatch(JavaEnqueueTest::exists);
  }

  @Test
  void enqueueOnTheConnectionOfTheCallersJooqTransactionExistsOnlyIfTheCallerCommits() throws Exception {
    // the way docs/migration.md shows for the removed DSLContext overloads: the jOOQ transaction's connection
    DSLContext dsl = DSL.using(db.dataSource(), SQLDialect.POSTGRES);
    List<Long> committed = dsl.transactionResult(cfg -> {
      List<Long> ids = new ArrayList<>();
      ids.add(cfg.dsl().connectionResult(c -> pgtask.enqueue(c, NewTask.of("jooq.commit", Map.of()))));
      ids.add(cfg.dsl().connectionResult(c -> pgtask.enqueue(c, new SendInvoice(7, "y"),
          TaskOptions.defaults().withQueue("jooq"))));
      ids.addAll(cfg.dsl().connectionResult(c -> pgtask.enqueueAll(c, List.of(NewTask.of("jooq.commit", Map.of())))));
      assertThat(exists(ids.get(0))).as("another connection sees the task before the commit").isFalse();
      return ids;
    });
    List<Long> rolledBack = new ArrayList<>();
    class Rollback extends RuntimeException {}
    try {
      dsl.transaction(cfg -> {
        cfg.dsl().connection(c -> rolledBack.add(pgtask.enqueue(c, NewTask.of("jooq.rollback", Map.of()))));
        cfg.dsl().connection(c -> rolledBack.addAll(pgtask.enqueueAll(c, List.of(NewTask.of("jooq.rollback", Map.of())))));
        throw new Rollback();
      });
    } catch (Rollback expected) {
      // the caller's transaction was rolled back
    }
    assertThat(committed).as("tasks enqueued in a committed jOOQ transaction exist").hasSize(3)
        .allMatch(JavaEnqueueTest::exists);
    assertThat(rolledBack).as("tasks enqueued in a rolled-back jOOQ transaction exist").hasSize(2)
        .noneMatch(JavaEnqueueTest::exists);
  }

  // ---- timing ----

  @Test
  void delayIsMeasuredFromTheDatabaseClockAtEnqueue() throws Exception {
    Duration delay = Duration.ofMinutes(90);
    TaskOptions delayed = TaskOptions.defaults().withDelay(delay);
    long single = pgtask.enqueue(NewTask.of("delayed", Map.of(), delayed));
    List<Long> batch;
    long inTx;
    try (Connection tx = db.connect()) {
      tx.setAutoCommit(false);
      inTx = pgtask.enqueue(tx, NewTask.of("delayed", Map.of(), delayed));
      batch = pgtask.enqueueAll(tx, List.of(NewTask.of("delayed", Map.of(), delayed), NewTask.of("now", Map.of())));
      tx.commit();
    }
    // created_at is the database's now() at insert; an application clock would never land on it exactly
    assertThat(runAtMinusCreatedAt(single)).as("run_at - created_at of a single delayed task").isEqualTo(delay);
    assertThat(runAtMinusCreatedAt(inTx)).as("run_at - created_at of a delayed task in a transaction").isEqualTo(delay);
    assertThat(runAtMinusCreatedAt(batch.get(0))).as("run_at - created_at of a delayed task in a batch").isEqualTo(delay);
    assertThat(runAtMinusCreatedAt(batch.get(1))).as("run_at - created_at of an undelayed task in a batch")
        .isEqualTo(Duration.ZERO);
    assertThat(row(single).get("view_state")).as("a delayed task shows as").isEqualTo("scheduled");
  }

  @Test
  void delayInAnOwnTransactionBatchIsMeasuredFromTheDatabaseClock() throws Exception {
    Duration delay = Duration.ofMinutes(30);
    List<Long> ids = pgtask.enqueueAll(List.of(NewTask.of("delayed.batch", Map.of(), TaskOptions.defaults().withDelay(delay))));
    assertThat(runAtMinusCreatedAt(ids.get(0))).as("run_at - created_at of a delayed task in an own-transaction batch")
        .isEqualTo(delay);
  }

  @Test
  void runAtIsStoredAsGiven() throws Exception {
    Instant at = Instant.now().plus(Duration.ofDays(3)).truncatedTo(ChronoUnit.MICROS);
    long id = pgtask.enqueue(NewTask.of("at", Map.of(), TaskOptions.defaults().withRunAt(at)));
    List<Long> batch = pgtask.enqueueAll(List.of(NewTask.of("at", Map.of(), TaskOptions.defaults().withRunAt(at))));
    assertThat(row(id).get("run_at")).as("run_at of a single task").isEqualTo(at);
    assertThat(row(batch.get(0)).get("run_at")).as("run_at of a batch task").isEqualTo(at);
  }

  // ---- bad input ----

  /** A bad task as Java callers would send it, the rule that must reject it, and text that must not leak. */
  record BadTask(String label, NewTask task, String constraint) {
    @Override
    public String toString() {
      return label;
    }
  }

  static Stream<BadTask> badTasks() {
    Map<String, Object> secret = Map.of("secret", PAYLOAD_MARKER);
    TaskOptions o = TaskOptions.defaults();
    Map<String, Object> big = new LinkedHashMap<>(secret);
    big.put("pad", "x".repeat(1024 * 1024));
    return Stream.of(
        new BadTask("empty kind", NewTask.of("", secret), "task_kind_length"),
        new BadTask("null kind", NewTask.of((String) null, secret), "task_kind_length"),
        new BadTask("kind of 256 characters", NewTask.of("k".repeat(256), secret), "task_kind_length"),
        new BadTask("empty queue", NewTask.of("k", secret, o.withQueue("")), "task_queue_format"),
        new BadTask("null queue", NewTask.of("k", secret, o.withQueue(null)), "task_queue_format"),
        new BadTask("queue of 129 characters", NewTask.of("k", secret, o.withQueue("q".repeat(129))), "task_queue_format"),
        new BadTask("queue with a space", NewTask.of("k", secret, o.withQueue("my queue")), "task_queue_format"),
        new BadTask("queue with a slash", NewTask.of("k", secret, o.withQueue("a/b")), "task_queue_format"),
        new BadTask("payload is a List", NewTask.of("k", List.of(PAYLOAD_MARKER)), "task_payload_object"),
        new BadTask("payload is a JSON array string", NewTask.of("k", "[\"" + PAYLOAD_MARKER + "\"]"), "task_payload_object"),
        new BadTask("payload is a JSON string", NewTask.of("k", "\"" + PAYLOAD_MARKER + "\""), "task_payload_object"),
        new BadTask("payload is a number", NewTask.of("k", 7351946), "task_payload_object"),
        new BadTask("payload is JSON null", NewTask.of("k", "null"), "task_payload_object"),
        new BadTask("payload over 1 MiB", NewTask.of("k", big), "task_payload_size"),
        new BadTask("max attempts 0", NewTask.of("k", secret, o.withMaxAttempts(0)), "task_max_attempts_positive"),
        new BadTask("max attempts -1", NewTask.of("k", secret, o.withMaxAttempts(-1)), "task_max_attempts_positive"),
        new BadTask("empty tenant", NewTask.of("k", secret, o.withTenant("")), "tenant_name_length"),
        new BadTask("tenant of 256 characters", NewTask.of("k", secret, o.withTenant("t".repeat(256))), "tenant_name_length"),
        new BadTask("empty dedupe key", NewTask.of("k", secret, o.withDedupeKey("")), "task_dedupe_key_length"),
        new BadTask("dedupe key of 256 characters", NewTask.of("k", secret, o.withDedupeKey("d".repeat(256))),
            "task_dedupe_key_length"),
        new BadTask("payload is not JSON", NewTask.of("k", "{\"secret\": " + PAYLOAD_MARKER), "task_payload_json"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("badTasks")
  void enqueueRejectsBadInputWithTheSameRuleAsSql(BadTask bad) throws Exception {
    long before = taskCount();
    InvalidTaskException e = catchThrowableOfType(InvalidTaskException.class, () -> pgtask.enqueue(bad.task()));
    assertThat(e).as("exception for %s", bad).isNotNull();
    assertThat(e.constraint()).as("rule named for %s", bad).isEqualTo(bad.constraint());
    assertNoPayloadIn(e, bad);
    assertThat(taskCount()).as("tasks stored after rejecting %s", bad).isEqualTo(before);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("badTasks")
  void enqueueAllRejectsTheWholeBatchNamingTheBadTasksPosition(BadTask bad) throws Exception {
    long before = taskCount();
    List<NewTask> batch = List.of(NewTask.of("good", Map.of()), NewTask.of("good", Map.of(), TaskOptions.defaults()
        .withTenant("batch-tenant")), bad.task(), NewTask.of("good", Map.of()));
    InvalidTaskException e = catchThrowableOfType(InvalidTaskException.class, () -> pgtask.enqueueAll(batch));
    assertThat(e).as("exception for a batch with %s", bad).isNotNull();
    assertThat(e.constraint()).as("rule named for a batch with %s", bad).isEqualTo(bad.constraint());
    assertThat(e.getMessage()).as("error names the bad task's position").containsPattern("task 3 of (4|the batch)");
    assertNoPayloadIn(e, bad);
    assertThat(taskCount()).as("tasks stored from a rejected batch").isEqualTo(before);
  }

  @Test
  void enqueueInTheCallersTransactionRejectsBadInputTheSameWay() throws Exception {
    try (Connection tx = db.connect()) {
      tx.setAutoCommit(false);
      InvalidTaskException e = catchThrowableOfType(InvalidTaskException.class,
          () -> pgtask.enqueue(tx, NewTask.of("k", Map.of(), TaskOptions.defaults().withQueue("bad queue"))));
      assertThat(e.constraint()).as("rule named on the caller's connection").isEqualTo("task_queue_format");
      tx.rollback();
    }
    InvalidTaskException e = catchThrowableOfType(InvalidTaskException.class,
        () -> DSL.using(db.dataSource(), SQLDialect.POSTGRES).transaction(cfg -> cfg.dsl().connection(c ->
            pgtask.enqueueAll(c, List.of(NewTask.of("k", Map.of(), TaskOptions.defaults().withMaxAttempts(0)))))));
    assertThat(e).as("exception from a batch in a jOOQ transaction").isNotNull();
    assertThat(e.constraint()).as("rule named in a jOOQ transaction").isEqualTo("task_max_attempts_positive");
  }

  private static void assertNoPayloadIn(Throwable e, BadTask bad) {
    for (Throwable c = e; c != null; c = c.getCause()) {
      assertThat(String.valueOf(c)).as("error text (or its causes) for %s", bad)
          .doesNotContain(PAYLOAD_MARKER).doesNotContain("7351946").doesNotContain("xxxxxxxx");
    }
  }

  // ---- one expectation for SQL and Java ----

  @Test
  void sqlAndJavaProduceIdenticalRowsExceptIdCreatedAtAndRunAt() throws Exception {
    try (Connection c = db.connect()) {
      // register the tenant up front: a rolled-back registration would burn a registry id
      queryLong(c, "SELECT pgtask.tenant_id('identical-tenant')");
      c.setAutoCommit(false);
      Instant runAt = Instant.parse("2031-05-06T07:08:09.123456Z");

      // every option set
      String json = "{\"customer\": \"Zoë\", \"invoiceId\": 99}";
      NewTask full = NewTask.of(new SendInvoice(99, "Zoë"), TaskOptions.defaults().withQueue("billing.eu")
          .withTenant("identical-tenant").withRunAt(runAt).withPriority(-3).withMaxAttempts(9)
          .withDedupeKey("identical-key"));
      String sqlSingle = sqlRow(c, """
          SELECT pgtask.enqueue(kind => 'invoice.send', payload => '%s', queue => 'billing.eu',
                                tenant => 'identical-tenant', run_at => '2031-05-06T07:08:09.123456Z',
                                priority => -3, max_attempts => 9, dedupe_key => 'identical-key')""".formatted(json));
      String sqlBatch = sqlRow(c, """
          SELECT id FROM pgtask.enqueue_batch(kinds => ARRAY['invoice.send'], payloads => ARRAY['%s'::jsonb],
              queues => ARRAY['billing.eu'], tenants => ARRAY['identical-tenant'],
              run_ats => ARRAY['2031-05-06T07:08:09.123456Z'::timestamptz], priorities => ARRAY[-3],
              max_attempts => ARRAY[9], dedupe_keys => ARRAY['identical-key'])""".formatted(json));
      String javaSingle = javaRow(c, () -> pgtask.enqueue(c, full));
      String javaBatch = javaRow(c, () -> pgtask.enqueueAll(c, List.of(full)).get(0));
      assertThat(sqlSingle).as("row from pgtask.enqueue with every option").contains("identical-key");
      assertThat(List.of(sqlBatch, javaSingle, javaBatch))
          .as("rows from enqueue_batch, PgTask.enqueue and PgTask.enqueueAll, compared to pgtask.enqueue's")
          .containsOnly(sqlSingle);

      // defaults only
      NewTask plain = NewTask.of("plain.kind", null);
      String sqlPlain = sqlRow(c, "SELECT pgtask.enqueue('plain.kind')");
      String sqlPlainBatch = sqlRow(c, "SELECT id FROM pgtask.enqueue_batch(ARRAY['plain.kind'])");
      String javaPlain = javaRow(c, () -> pgtask.enqueue(c, plain));
      String javaPlainBatch = javaRow(c, () -> pgtask.enqueueAll(c, List.of(plain)).get(0));
      assertThat(List.of(sqlPlainBatch, javaPlain, javaPlainBatch))
          .as("rows of a task with default options from the four ways in").containsOnly(sqlPlain);
    }
  }

  /** Runs the SQL returning a task id, reads the task's row minus id/created_at/run_at, rolls back. */
  private static String sqlRow(Connection c, String sql) throws SQLException {
    return javaRow(c, () -> queryLong(c, sql));
  }

  private static String javaRow(Connection c, IdSupplier enqueue) throws SQLException {
    try {
      long id = enqueue.get();
      try (PreparedStatement ps = c.prepareStatement(
          "SELECT (to_jsonb(t) - 'id' - 'created_at' - 'run_at')::text FROM pgtask.task t WHERE t.id = ?")) {
        ps.setLong(1, id);
        try (ResultSet rs = ps.executeQuery()) {
          assertThat(rs.next()).as("the enqueued task is visible in its transaction").isTrue();
          return rs.getString(1);
        }
      }
    } finally {
      c.rollback();
    }
  }

  @FunctionalInterface
  private interface IdSupplier {
    long get() throws SQLException;
  }

  // ---- helpers ----

  private static long taskCount() throws SQLException {
    try (Connection c = db.connect()) {
      return SqlEnqueueTest.taskCount(c);
    }
  }

  private static boolean exists(long id) {
    try (Connection c = db.connect()) {
      return queryLong(c, "SELECT count(*) FROM pgtask.task WHERE id = " + id) == 1;
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  private static Duration runAtMinusCreatedAt(long id) throws SQLException {
    try (Connection c = db.connect()) {
      long micros = queryLong(c,
          "SELECT (extract(epoch FROM run_at - created_at) * 1000000)::bigint FROM pgtask.task WHERE id = " + id);
      return Duration.of(micros, ChronoUnit.MICROS);
    }
  }

  private static Map<String, Object> row(long id) throws SQLException {
    try (Connection c = db.connect(); PreparedStatement ps = c.prepareStatement("""
        SELECT t.kind, t.payload::text AS payload, t.queue, tn.name AS tenant, t.state::text AS state, t.priority,
               t.max_attempts, t.dedupe_key, t.run_at, v.state AS view_state
        FROM pgtask.task t LEFT JOIN pgtask.tenant tn ON tn.id = t.tenant_id JOIN pgtask.tasks v ON v.id = t.id
        WHERE t.id = ?""")) {
      ps.setLong(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        assertThat(rs.next()).as("task %s is stored", id).isTrue();
        Map<String, Object> row = new LinkedHashMap<>();
        for (int i = 1; i <= rs.getMetaData().getColumnCount(); i++) {
          Object v = rs.getObject(i);
          if (v instanceof Timestamp ts) {
            v = ts.toInstant();
          }
          row.put(rs.getMetaData().getColumnLabel(i), v);
        }
        return row;
      }
    }
  }
}
