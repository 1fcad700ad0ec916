package dev.pgtask;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgtask.testsupport.ServerErrors;
import dev.pgtask.testsupport.TestDatabase;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** pgtask.enqueue and pgtask.enqueue_batch called from plain SQL, as any language would. */
class SqlEnqueueTest {

  /** Appears in every payload of a rejected task; no error may ever show it. */
  static final String PAYLOAD_MARKER = "PAYLOAD-SECRET-7f3a";

  private static TestDatabase db;

  @BeforeAll
  static void createDatabase() {
    db = TestDatabase.create("sql_enqueue");
  }

  @AfterAll
  static void dropDatabase() {
    db.close();
  }

  // ---- the happy paths ----

  @Test
  void enqueueWithNamedArgumentsStoresEveryField() throws Exception {
    try (Connection c = db.connect()) {
      long id = queryLong(c, """
          SELECT pgtask.enqueue(kind => 'invoice.send', payload => '{"invoice": 42}', queue => 'billing',
                                tenant => 'acme', run_at => now() + interval '1 hour', priority => -5,
                                max_attempts => 3, dedupe_key => 'invoice-42')""");
      try (PreparedStatement ps = c.prepareStatement("""
          SELECT t.kind, t.payload::text, t.queue, tn.name, t.state::text, t.priority, t.attempt, t.max_attempts,
                 t.dedupe_key, t.run_at - t.created_at AS delay, t.blocked
          FROM pgtask.task t LEFT JOIN pgtask.tenant tn ON tn.id = t.tenant_id WHERE t.id = ?""")) {
        ps.setLong(1, id);
        try (ResultSet rs = ps.executeQuery()) {
          assertThat(rs.next()).as("the enqueued task is stored").isTrue();
          assertThat(rs.getString(1)).as("kind").isEqualTo("invoice.send");
          assertThat(rs.getString(2)).as("payload").isEqualTo("{\"invoice\": 42}");
          assertThat(rs.getString(3)).as("queue").isEqualTo("billing");
          assertThat(rs.getString(4)).as("tenant").isEqualTo("acme");
          assertThat(rs.getString(5)).as("stored state").isEqualTo("available");
          assertThat(rs.getInt(6)).as("priority").isEqualTo(-5);
          assertThat(rs.getInt(7)).as("attempts so far").isZero();
          assertThat(rs.getInt(8)).as("max attempts").isEqualTo(3);
          assertThat(rs.getString(9)).as("dedupe key").isEqualTo("invoice-42");
          assertThat(rs.getString(10)).as("run_at relative to created_at").isEqualTo("01:00:00");
          assertThat(rs.getBoolean(11)).as("a tenant's first task is its head, not waiting").isFalse();
        }
      }
    }
  }

  @Test
  void enqueueWithOnlyAKindTakesTheDocumentedDefaults() throws Exception {
    try (Connection c = db.connect()) {
      long id = queryLong(c, "SELECT pgtask.enqueue('report.build')");
      try (PreparedStatement ps = c.prepareStatement("""
          SELECT payload::text, queue, tenant_id, state::text, priority, attempt, max_attempts, dedupe_key,
                 blocked, run_at = created_at, finished_at, owner, lease_until, errors
          FROM pgtask.task WHERE id = ?""")) {
        ps.setLong(1, id);
        try (ResultSet rs = ps.executeQuery()) {
          assertThat(rs.next()).isTrue();
          assertThat(rs.getString(1)).as("default payload").isEqualTo("{}");
          assertThat(rs.getString(2)).as("default queue").isEqualTo("default");
          assertThat(rs.getObject(3)).as("default tenant").isNull();
          assertThat(rs.getString(4)).as("state of a new task").isEqualTo("available");
          assertThat(rs.getInt(5)).as("default priority").isZero();
          assertThat(rs.getInt(6)).as("attempts of a new task").isZero();
          assertThat(rs.getInt(7)).as("default max attempts").isEqualTo(25);
          assertThat(rs.getString(8)).as("default dedupe key").isNull();
          assertThat(rs.getBoolean(9)).as("a task without tenant never waits").isFalse();
          assertThat(rs.getBoolean(10)).as("default run_at is the enqueue time").isTrue();
          assertThat(rs.getObject(11)).as("finished_at of a new task").isNull();
          assertThat(rs.getObject(12)).as("owner of a new task").isNull();
          assertThat(rs.getObject(13)).as("lease of a new task").isNull();
          assertThat(rs.getObject(14)).as("error history of a new task").isNull();
        }
      }
    }
  }

  @Test
  void runAtNullMeansTheDatabaseNowOfTheEnqueuingTransaction() throws Exception {
    try (Connection c = db.connect()) {
      c.setAutoCommit(false);
      // now() is the transaction's start: it differs from the application clock and from clock_timestamp()
      OffsetDateTime dbNow = queryTimestamp(c, "SELECT now()");
      long explicitNull = queryLong(c, "SELECT pgtask.enqueue(kind => 'k', run_at => NULL)");
      long omitted = queryLong(c, "SELECT pgtask.enqueue(kind => 'k')");
      c.commit();
      assertThat(runAt(c, explicitNull)).as("run_at of a task enqueued with run_at => NULL").isEqualTo(dbNow);
      assertThat(runAt(c, omitted)).as("run_at of a task enqueued without run_at").isEqualTo(dbNow);
    }
  }

  @Test
  void futureRunAtShowsAsScheduledAndPastRunAtAsAvailable() throws Exception {
    try (Connection c = db.connect()) {
      long future = queryLong(c, "SELECT pgtask.enqueue(kind => 'k', run_at => now() + interval '10 minutes')");
      long past = queryLong(c, "SELECT pgtask.enqueue(kind => 'k', run_at => now() - interval '10 minutes')");
      assertThat(viewState(c, future)).as("view state of a task whose run_at is in the future").isEqualTo("scheduled");
      assertThat(storedState(c, future)).as("stored state of a scheduled task").isEqualTo("available");
      assertThat(viewState(c, past)).as("view state of a task whose run_at has passed").isEqualTo("available");
    }
  }

  @Test
  void viewTasksHasTheDocumentedColumns() throws Exception {
    try (Connection c = db.connect(); PreparedStatement ps = c.prepareStatement("""
        SELECT column_name FROM information_schema.columns
        WHERE table_schema = 'pgtask' AND table_name = 'tasks' ORDER BY ordinal_position""");
        ResultSet rs = ps.executeQuery()) {
      List<String> columns = new ArrayList<>();
      while (rs.next()) {
        columns.add(rs.getString(1));
      }
      assertThat(columns).as("columns of the public view pgtask.tasks").containsExactly(
          "id", "kind", "queue", "tenant", "state", "priority", "attempt", "max_attempts", "run_at",
          "created_at", "finished_at", "last_error");
    }
  }

  @Test
  void unicodeKindsAndTenantsAreAccepted() throws Exception {
    String kind = "rechnung.versenden.größe.日本語";
    String tenant = "Müller & Söhne 🚀 Привет";
    String tenantOf255 = "é".repeat(254) + "🚀";
    try (Connection c = db.connect()) {
      long id = enqueue(c, kind, "{\"name\": \"Zoë\"}", "default", tenant, 25, null);
      long longId = enqueue(c, "k".repeat(255), "{}", "q".repeat(128), tenantOf255, 25, null);
      try (PreparedStatement ps = c.prepareStatement("SELECT kind, tenant, queue FROM pgtask.tasks WHERE id = ?")) {
        ps.setLong(1, id);
        try (ResultSet rs = ps.executeQuery()) {
          assertThat(rs.next()).isTrue();
          assertThat(rs.getString(1)).as("Unicode kind round-trips").isEqualTo(kind);
          assertThat(rs.getString(2)).as("Unicode tenant round-trips").isEqualTo(tenant);
        }
        ps.setLong(1, longId);
        try (ResultSet rs = ps.executeQuery()) {
          assertThat(rs.next()).isTrue();
          assertThat(rs.getString(1)).as("a kind of exactly 255 characters").hasSize(255);
          assertThat(rs.getString(2)).as("a tenant of 255 characters (counted as characters, not bytes)")
              .isEqualTo(tenantOf255);
          assertThat(rs.getString(3)).as("a queue of exactly 128 characters").hasSize(128);
        }
      }
    }
  }

  @Test
  void payloadExactlyAtTheLimitIsAcceptedAndOneByteMoreIsRejected() throws Exception {
    try (Connection c = db.connect()) {
      String payload = "{\"pad\": \"" + "x".repeat(100) + "\"}";
      int bytes = (int) queryLong(c, "SELECT octet_length('" + payload + "'::jsonb::text)");
      exec(c, "SELECT pgtask.set_max_payload_bytes(" + bytes + ")");
      try {
        long id = enqueue(c, "k", payload, "default", null, 25, null);
        assertThat(id).as("a payload of exactly max_payload_bytes is accepted").isPositive();
        lowerLimitRejects(c, bytes - 1, payload);
      } finally {
        exec(c, "SELECT pgtask.set_max_payload_bytes(1048576)");
      }
    }
  }

  private void lowerLimitRejects(Connection c, int limit, String payload) throws Exception {
    exec(c, "SELECT pgtask.set_max_payload_bytes(" + limit + ")");
    long before = taskCount(c);
    ServerErrors e = ServerErrors.of(() -> enqueue(c, "k", payload, "default", null, 25, null));
    assertThat(e.sqlState()).as("SQLSTATE of a payload one byte over the lowered limit").isEqualTo("23514");
    assertThat(e.constraint()).as("rule that rejects an oversized payload").isEqualTo("task_payload_size");
    assertThat(taskCount(c)).as("tasks stored by a rejected enqueue").isEqualTo(before);
  }

  // ---- bad input ----

  /** One invalid field; everything else is valid. NULL payload/queue/max_attempts take defaults in a batch. */
  record Bad(String label, String kind, String payload, String queue, String tenant, Integer maxAttempts,
      String dedupeKey, String constraint, boolean nullMeansDefaultInBatch) {

    static Bad of(String label, String constraint) {
      return new Bad(label, "mail.send", "{\"secret\": \"" + PAYLOAD_MARKER + "\"}", "default", null, 25, null,
          constraint, false);
    }

    Bad kind(String v) {
      return new Bad(label, v, payload, queue, tenant, maxAttempts, dedupeKey, constraint, nullMeansDefaultInBatch);
    }

    Bad payload(String v) {
      return new Bad(label, kind, v, queue, tenant, maxAttempts, dedupeKey, constraint, v == null);
    }

    Bad queue(String v) {
      return new Bad(label, kind, payload, v, tenant, maxAttempts, dedupeKey, constraint, v == null);
    }

    Bad tenant(String v) {
      return new Bad(label, kind, payload, queue, v, maxAttempts, dedupeKey, constraint, nullMeansDefaultInBatch);
    }

    Bad maxAttempts(Integer v) {
      return new Bad(label, kind, payload, queue, tenant, v, dedupeKey, constraint, v == null);
    }

    Bad dedupeKey(String v) {
      return new Bad(label, kind, payload, queue, tenant, maxAttempts, v, constraint, nullMeansDefaultInBatch);
    }

    @Override
    public String toString() {
      return label;
    }
  }

  /** Every invalid input the issue lists, with the rule that must reject it. */
  static Stream<Bad> badInputs() {
    String big = "{\"secret\": \"" + PAYLOAD_MARKER + "\", \"pad\": \"" + "x".repeat(1024 * 1024) + "\"}";
    return Stream.of(
        Bad.of("empty kind", "task_kind_length").kind(""),
        Bad.of("NULL kind", "task_kind_length").kind(null),
        Bad.of("kind of 256 characters", "task_kind_length").kind("k".repeat(256)),
        Bad.of("empty queue", "task_queue_format").queue(""),
        Bad.of("NULL queue", "task_queue_format").queue(null),
        Bad.of("queue of 129 characters", "task_queue_format").queue("q".repeat(129)),
        Bad.of("queue with a space", "task_queue_format").queue("my queue"),
        Bad.of("queue with a slash", "task_queue_format").queue("a/b"),
        Bad.of("queue with a semicolon", "task_queue_format").queue("a;b"),
        Bad.of("queue with a non-ASCII letter", "task_queue_format").queue("größe"),
        Bad.of("payload is an array", "task_payload_object").payload("[\"" + PAYLOAD_MARKER + "\"]"),
        Bad.of("payload is a string", "task_payload_object").payload("\"" + PAYLOAD_MARKER + "\""),
        Bad.of("payload is a number", "task_payload_object").payload("7351946"),
        Bad.of("payload is JSON null", "task_payload_object").payload("null"),
        Bad.of("payload is SQL NULL", "task_payload_object").payload(null),
        Bad.of("payload over 1 MiB", "task_payload_size").payload(big),
        Bad.of("max_attempts 0", "task_max_attempts_positive").maxAttempts(0),
        Bad.of("max_attempts -1", "task_max_attempts_positive").maxAttempts(-1),
        Bad.of("max_attempts NULL", "task_max_attempts_positive").maxAttempts(null),
        Bad.of("empty tenant", "tenant_name_length").tenant(""),
        Bad.of("tenant of 256 characters", "tenant_name_length").tenant("t".repeat(256)),
        Bad.of("empty dedupe_key", "task_dedupe_key_length").dedupeKey(""),
        Bad.of("dedupe_key of 256 characters", "task_dedupe_key_length").dedupeKey("d".repeat(256)));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("badInputs")
  void enqueueRejectsBadInputByNameStoresNothingAndNeverEchoesThePayload(Bad bad) throws Exception {
    try (Connection c = db.connect()) {
      long tasksBefore = taskCount(c);
      long tenantsBefore = tenantCount(c);
      ServerErrors e = ServerErrors.of(() ->
          enqueue(c, bad.kind(), bad.payload(), bad.queue(), bad.tenant(), bad.maxAttempts(), bad.dedupeKey()));
      assertThat(e.sqlState()).as("SQLSTATE for %s", bad).isEqualTo("23514");
      assertThat(e.constraint()).as("rule named for %s", bad).isEqualTo(bad.constraint());
      assertThat(e.message()).as("error message for %s", bad).startsWith("pgtask: invalid task");
      assertThat(e.everything()).as("everything the server said about %s", bad)
          .doesNotContain(PAYLOAD_MARKER).doesNotContain("7351946").doesNotContain("xxxxxxxx");
      assertThat(taskCount(c)).as("tasks stored after rejecting %s", bad).isEqualTo(tasksBefore);
      assertThat(tenantCount(c)).as("tenants registered after rejecting %s", bad).isEqualTo(tenantsBefore);
    }
  }

  @Test
  void loweredPayloadLimitRejectsAPayloadTheDefaultLimitAccepts() throws Exception {
    String payload = "{\"secret\": \"" + PAYLOAD_MARKER + "\", \"pad\": \"" + "x".repeat(2000) + "\"}";
    try (Connection c = db.connect()) {
      assertThat(enqueue(c, "k", payload, "default", null, 25, null)).as("accepted under the 1 MiB default").isPositive();
      exec(c, "SELECT pgtask.set_max_payload_bytes(1000)");
      try {
        long before = taskCount(c);
        ServerErrors single = ServerErrors.of(() -> enqueue(c, "k", payload, "default", null, 25, null));
        assertThat(single.constraint()).as("rule after set_max_payload_bytes(1000)").isEqualTo("task_payload_size");
        assertThat(single.everything()).as("error text").doesNotContain(PAYLOAD_MARKER);
        ServerErrors batch = ServerErrors.of(() -> enqueueBatch(c, List.of(
            new Object[] {"k", "{}", null, null, null, null},
            new Object[] {"k", payload, null, null, null, null})));
        assertThat(batch.constraint()).as("batch rule after set_max_payload_bytes(1000)").isEqualTo("task_payload_size");
        assertThat(batch.message()).as("batch error names the position").contains("task 2 of 2");
        assertThat(taskCount(c)).as("tasks stored by rejected enqueues").isEqualTo(before);
      } finally {
        exec(c, "SELECT pgtask.set_max_payload_bytes(1048576)");
      }
    }
  }

  // ---- enqueue_batch ----

  @Test
  void enqueueBatchInsertsEveryTaskAndReportsIdsInInputOrder() throws Exception {
    try (Connection c = db.connect()) {
      long before = taskCount(c);
      List<long[]> rows = enqueueBatch(c, List.of(
          new Object[] {"a", "{\"n\": 1}", "q1", null, 5, null},
          new Object[] {"b", null, null, "acme", null, "batch-key-1"},
          new Object[] {"c", "{\"n\": 3}", "q3", "acme", 1, null}));
      assertThat(rows).as("one result row per input task").hasSize(3);
      assertThat(rows).extracting(r -> r[0]).as("ord column").containsExactly(1L, 2L, 3L);
      assertThat(rows).extracting(r -> r[2]).as("inserted flags").containsExactly(1L, 1L, 1L);
      assertThat(taskCount(c)).as("tasks stored by a batch of 3").isEqualTo(before + 3);
      try (PreparedStatement ps = c.prepareStatement(
          """
          SELECT t.kind, t.payload::text, t.queue, tn.name, t.max_attempts
          FROM pgtask.task t LEFT JOIN pgtask.tenant tn ON tn.id = t.tenant_id WHERE t.id = ?""")) {
        ps.setLong(1, rows.get(1)[1]);
        try (ResultSet rs = ps.executeQuery()) {
          assertThat(rs.next()).isTrue();
          assertThat(rs.getString(1)).as("kind of task 2").isEqualTo("b");
          assertThat(rs.getString(2)).as("a NULL payload element takes the default").isEqualTo("{}");
          assertThat(rs.getString(3)).as("a NULL queue element takes the default").isEqualTo("default");
          assertThat(rs.getString(4)).as("tenant of task 2").isEqualTo("acme");
          assertThat(rs.getInt(5)).as("a NULL max_attempts element takes the default").isEqualTo(25);
        }
        ps.setLong(1, rows.get(0)[1]);
        try (ResultSet rs = ps.executeQuery()) {
          assertThat(rs.next()).isTrue();
          assertThat(rs.getString(1)).as("kind of task 1").isEqualTo("a");
          assertThat(rs.getString(2)).as("payload of task 1").isEqualTo("{\"n\": 1}");
          assertThat(rs.getString(3)).as("queue of task 1").isEqualTo("q1");
          assertThat(rs.getInt(5)).as("max attempts of task 1").isEqualTo(5);
        }
      }
    }
  }

  @Test
  void enqueueBatchWithOnlyKindsTakesTheDefaults() throws Exception {
    try (Connection c = db.connect()) {
      c.setAutoCommit(false);
      // a statement does not see rows inserted by a function it calls: read them in the next one
      exec(c, "CREATE TEMP TABLE batch_result ON COMMIT DROP AS SELECT * FROM pgtask.enqueue_batch(kinds => ARRAY['x', 'y'])");
      PreparedStatement ps = c.prepareStatement("""
            SELECT t.payload::text, t.queue, t.tenant_id, t.priority, t.max_attempts, t.run_at = now()
            FROM batch_result b JOIN pgtask.task t ON t.id = b.id ORDER BY b.ord""");
      ResultSet rs = ps.executeQuery();
      int n = 0;
      while (rs.next()) {
        n++;
        assertThat(rs.getString(1)).as("default payload").isEqualTo("{}");
        assertThat(rs.getString(2)).as("default queue").isEqualTo("default");
        assertThat(rs.getObject(3)).as("default tenant").isNull();
        assertThat(rs.getInt(4)).as("default priority").isZero();
        assertThat(rs.getInt(5)).as("default max attempts").isEqualTo(25);
        assertThat(rs.getBoolean(6)).as("default run_at is the database now()").isTrue();
      }
      assertThat(n).as("tasks enqueued by a batch of two kinds").isEqualTo(2);
      c.commit();
    }
  }

  /** The bad inputs that are bad in a batch too (a NULL array element there means "the default"). */
  static Stream<Bad> badBatchInputs() {
    return badInputs().filter(b -> !b.nullMeansDefaultInBatch());
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("badBatchInputs")
  void enqueueBatchRejectsTheWholeBatchNamingThePositionOfTheBadTask(Bad bad) throws Exception {
    try (Connection c = db.connect()) {
      long tasksBefore = taskCount(c);
      long tenantsBefore = tenantCount(c);
      ServerErrors e = ServerErrors.of(() -> enqueueBatch(c, List.of(
          new Object[] {"good.one", "{}", "default", "batch-tenant-" + bad.label().hashCode(), 25, null},
          new Object[] {"good.two", "{}", "default", null, 25, null},
          new Object[] {bad.kind(), bad.payload(), bad.queue(), bad.tenant(), bad.maxAttempts(), bad.dedupeKey()},
          new Object[] {"good.four", "{}", "default", null, 25, null})));
      assertThat(e.sqlState()).as("SQLSTATE for a batch with %s", bad).isEqualTo("23514");
      assertThat(e.constraint()).as("rule named for a batch with %s", bad).isEqualTo(bad.constraint());
      assertThat(e.message()).as("error names the bad task's position").contains("task 3 of 4");
      assertThat(e.everything()).as("everything the server said about a batch with %s", bad)
          .doesNotContain(PAYLOAD_MARKER).doesNotContain("7351946").doesNotContain("xxxxxxxx");
      assertThat(taskCount(c)).as("tasks stored from a rejected batch").isEqualTo(tasksBefore);
      assertThat(tenantCount(c)).as("tenants registered by a rejected batch").isEqualTo(tenantsBefore);
    }
  }

  @Test
  void enqueueBatchRejectsArraysOfDifferentLengths() throws Exception {
    try (Connection c = db.connect()) {
      long before = taskCount(c);
      ServerErrors e = ServerErrors.of(() -> exec(c,
          "SELECT * FROM pgtask.enqueue_batch(kinds => ARRAY['a', 'b'], queues => ARRAY['q'])"));
      assertThat(e.sqlState()).as("SQLSTATE for arrays of different lengths").isEqualTo("22023");
      assertThat(taskCount(c)).as("tasks stored by a malformed batch").isEqualTo(before);
    }
  }

  // ---- helpers ----

  static long enqueue(Connection c, String kind, String payload, String queue, String tenant, Integer maxAttempts,
      String dedupeKey) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("""
        SELECT pgtask.enqueue(kind => ?, payload => ?::jsonb, queue => ?, tenant => ?,
                              max_attempts => ?, dedupe_key => ?)""")) {
      ps.setString(1, kind);
      ps.setString(2, payload);
      ps.setString(3, queue);
      ps.setString(4, tenant);
      if (maxAttempts == null) {
        ps.setNull(5, Types.INTEGER);
      } else {
        ps.setInt(5, maxAttempts);
      }
      ps.setString(6, dedupeKey);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  /**
   * Calls pgtask.enqueue_batch; each task is {kind, payload, queue, tenant, max_attempts, dedupe_key}. Returns
   * {ord, id, inserted ? 1 : 0} per row.
   */
  static List<long[]> enqueueBatch(Connection c, List<Object[]> tasks) throws SQLException {
    int n = tasks.size();
    String[][] cols = new String[4][n];
    Integer[] maxAttempts = new Integer[n];
    String[] dedupeKeys = new String[n];
    for (int i = 0; i < n; i++) {
      Object[] t = tasks.get(i);
      for (int k = 0; k < 4; k++) {
        cols[k][i] = (String) t[k];
      }
      maxAttempts[i] = (Integer) t[4];
      dedupeKeys[i] = (String) t[5];
    }
    try (PreparedStatement ps = c.prepareStatement("""
        SELECT ord, id, inserted FROM pgtask.enqueue_batch(kinds => ?, payloads => ?::text[]::jsonb[], queues => ?,
                                                           tenants => ?, max_attempts => ?, dedupe_keys => ?)
        ORDER BY ord""")) {
      Array kinds = c.createArrayOf("text", cols[0]);
      ps.setArray(1, kinds);
      ps.setArray(2, c.createArrayOf("text", cols[1]));
      ps.setArray(3, c.createArrayOf("text", cols[2]));
      ps.setArray(4, c.createArrayOf("text", cols[3]));
      ps.setArray(5, c.createArrayOf("int4", maxAttempts));
      ps.setArray(6, c.createArrayOf("text", dedupeKeys));
      List<long[]> out = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(new long[] {rs.getLong(1), rs.getLong(2), rs.getBoolean(3) ? 1 : 0});
        }
      }
      return out;
    }
  }

  static long queryLong(Connection c, String sql) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql); ResultSet rs = ps.executeQuery()) {
      rs.next();
      return rs.getLong(1);
    }
  }

  static OffsetDateTime queryTimestamp(Connection c, String sql) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql); ResultSet rs = ps.executeQuery()) {
      rs.next();
      return rs.getObject(1, OffsetDateTime.class);
    }
  }

  static void exec(Connection c, String sql) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      ps.execute();
    }
  }

  static long taskCount(Connection c) throws SQLException {
    return queryLong(c, "SELECT count(*) FROM pgtask.task");
  }

  static long tenantCount(Connection c) throws SQLException {
    return queryLong(c, "SELECT count(*) FROM pgtask.tenant");
  }

  private static OffsetDateTime runAt(Connection c, long id) throws SQLException {
    return queryTimestamp(c, "SELECT run_at FROM pgtask.task WHERE id = " + id);
  }

  private static String viewState(Connection c, long id) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT state FROM pgtask.tasks WHERE id = ?")) {
      ps.setLong(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getString(1);
      }
    }
  }

  private static String storedState(Connection c, long id) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT state::text FROM pgtask.task WHERE id = ?")) {
      ps.setLong(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getString(1);
      }
    }
  }
}
