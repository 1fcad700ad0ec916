package dev.pgtask;

import static dev.pgtask.SqlEnqueueTest.exec;
import static dev.pgtask.SqlEnqueueTest.queryLong;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgtask.testsupport.ServerErrors;
import dev.pgtask.testsupport.TestDatabase;
import java.math.BigInteger;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Bad input a producer can send gets a named error at enqueue and stores nothing: a run time that is
 * not finite, and a payload a worker could not read (PayloadLimits). One bad row already stored
 * never makes a view fail.
 */
class ProducerBadInputTest {

  private static final String SUFFIX = UUID.randomUUID().toString().substring(0, 8).toLowerCase(Locale.ROOT);
  private static final String PRODUCER = "pgtask_test_badinput_" + SUFFIX;
  private static final String PASSWORD = "pw-" + UUID.randomUUID();

  private static TestDatabase db;
  private static PgTask pgtask;

  @BeforeAll
  static void createDatabase() throws Exception {
    db = TestDatabase.create("producer_bad_input");
    pgtask = PgTask.create(db.dataSource());
    TestDatabase.execAdmin("CREATE ROLE " + PRODUCER + " LOGIN PASSWORD '" + PASSWORD + "'");
    try (Connection c = db.connect()) {
      exec(c, "SELECT pgtask.grant_producer('" + PRODUCER + "')");
      // room for a string value longer than the string limit
      exec(c, "SELECT pgtask.set_max_payload_bytes(" + (PayloadLimits.MAX_STRING_LENGTH + 1000) + ")");
    }
  }

  @AfterAll
  static void dropDatabase() {
    try {
      db.close();
    } finally {
      TestDatabase.execAdmin("DROP ROLE IF EXISTS " + PRODUCER);
    }
  }

  // ---- run_at ----

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"infinity", "-infinity"})
  void anInfiniteRunAtIsRefusedWithANamedErrorForALeastPrivilegeProducer(String when) throws Exception {
    try (Connection c = db.connectAs(PRODUCER, PASSWORD)) {
      ServerErrors one = ServerErrors.of(() -> exec(c,
          "SELECT pgtask.enqueue(kind => 'run.at.bad', run_at => '" + when + "')"));
      assertThat(one.sqlState()).as("SQLSTATE of enqueue with run_at %s", when).isEqualTo("23514");
      assertThat(one.constraint()).as("the rule named").isEqualTo("task_run_at_finite");
      assertThat(one.message()).as("the message").isEqualTo("pgtask: invalid task: run_at must be a finite time, not " + when);
      ServerErrors batch = ServerErrors.of(() -> exec(c, "SELECT * FROM pgtask.enqueue_batch(kinds => ARRAY['run.at.bad', "
          + "'run.at.bad'], run_ats => ARRAY[now(), '" + when + "'::timestamptz])"));
      assertThat(batch.sqlState()).as("SQLSTATE of the batch").isEqualTo("23514");
      assertThat(batch.constraint()).as("the rule named by the batch").isEqualTo("task_run_at_finite");
      assertThat(batch.message()).as("the batch's message names the task").contains("(task 2 of 2)");
    }
    assertThat(count("kind = 'run.at.bad'")).as("tasks stored").isZero();
  }

  @Test
  void updateTaskRefusesAnInfiniteRunAt() throws Exception {
    try (Connection c = db.connect()) {
      long id = queryLong(c, "SELECT pgtask.enqueue(kind => 'run.at.update')");
      ServerErrors e = ServerErrors.of(() -> exec(c, "SELECT pgtask.update_task(" + id + ", run_at => 'infinity')"));
      assertThat(e.constraint()).as("the rule named by update_task").isEqualTo("task_run_at_finite");
      assertThat(queryLong(c, "SELECT count(*) FROM pgtask.task WHERE id = " + id + " AND isfinite(run_at)"))
          .as("the task keeps its run_at").isEqualTo(1);
    }
  }

  @Test
  void javaEnqueueRefusesARunAtThatIsNotAFiniteDatabaseTime() throws Exception {
    for (Instant at : List.of(Instant.MAX, Instant.MIN)) {
      InvalidTaskException one = catchThrowableOfType(InvalidTaskException.class,
          () -> pgtask.enqueue(NewTask.of("run.at.java", "{}", TaskOptions.defaults().withRunAt(at))));
      assertThat(one).as("enqueue with runAt %s", at).isNotNull();
      assertThat(one.constraint()).as("the rule named for runAt %s", at).isEqualTo("task_run_at_finite");
      InvalidTaskException batch = catchThrowableOfType(InvalidTaskException.class,
          () -> pgtask.enqueueAll(List.of(NewTask.of("run.at.java", "{}", TaskOptions.defaults()),
              NewTask.of("run.at.java", "{}", TaskOptions.defaults().withRunAt(at)))));
      assertThat(batch).as("batch with runAt %s", at).isNotNull();
      assertThat(batch.constraint()).as("the rule named by the batch for runAt %s", at).isEqualTo("task_run_at_finite");
      assertThat(batch.getMessage()).as("the batch's message").contains("task 2 of the batch");
    }
    assertThat(count("kind = 'run.at.java'")).as("tasks stored").isZero();
  }

  @Test
  void theViewsKeepAnsweringWhenAStoredTaskHasAnInfiniteRunAt() throws Exception {
    try (Connection c = db.connect()) {
      // rows an owner made by hand (or stored before enqueue refused them)
      exec(c, "INSERT INTO pgtask.task (kind, queue, run_at) VALUES ('hand.made', 'infinite_q', '-infinity'), "
          + "('hand.made', 'infinite_q', 'infinity')");
      try {
        assertThat(queryLong(c, "SELECT count(*) FROM pgtask.queue_summary WHERE queue = 'infinite_q' "
            + "AND lag >= interval '0' AND available = 1 AND scheduled = 1"))
            .as("pgtask.queue_summary answers, with the due task's lag").isEqualTo(1);
        assertThat(queryLong(c, "SELECT count(*) FROM pgtask.unrunnable WHERE queue = 'infinite_q' "
            + "AND oldest_due_for >= interval '0' AND tasks = 1"))
            .as("pgtask.unrunnable answers (no worker serves the queue)").isEqualTo(1);
        assertThat(queryLong(c, "SELECT unserved_tasks FROM pgtask.health"))
            .as("pgtask.health answers").isGreaterThanOrEqualTo(1);
        for (String view : List.of("pgtask.tasks", "pgtask.running", "pgtask.workers", "pgtask.tenant_locks",
            "pgtask.paused_queues")) {
          queryLong(c, "SELECT count(*) FROM " + view);
        }
      } finally {
        exec(c, "DELETE FROM pgtask.task WHERE queue = 'infinite_q'");
      }
    }
  }

  // ---- payload limits ----

  /** Depth n: the payload object is depth 1, each array inside one more. */
  static String nested(int depth) {
    return "{\"a\":" + "[".repeat(depth - 1) + "]".repeat(depth - 1) + "}";
  }

  static String number(int digits) {
    return "{\"n\":" + "9".repeat(digits) + "}";
  }

  static String name(int length) {
    return "{\"" + "k".repeat(length) + "\":1}";
  }

  static String string(int length) {
    return "{\"s\":\"" + "s".repeat(length) + "\"}";
  }

  static Stream<Arguments> overLimit() {
    return Stream.of(
        Arguments.of("nested 1002 deep", nested(1002), "task_payload_depth", "max_depth"),
        Arguments.of("nested one too deep", nested(PayloadLimits.MAX_DEPTH + 1), "task_payload_depth", "max_depth"),
        Arguments.of("a 1200-digit number", number(1200), "task_payload_number_length", "max_number_length"),
        Arguments.of("a number one digit too long", "{\"x\":[1,2,{\"n\":-0." + "1".repeat(PayloadLimits.MAX_NUMBER_LENGTH + 1) + "}]}",
            "task_payload_number_length", "max_number_length"),
        Arguments.of("a name one character too long", name(PayloadLimits.MAX_NAME_LENGTH + 1),
            "task_payload_name_length", "max_name_length"),
        Arguments.of("a string one character too long", string(PayloadLimits.MAX_STRING_LENGTH + 1),
            "task_payload_string_length", "max_string_length"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("overLimit")
  void aPayloadAWorkerCannotReadIsRefusedAtSqlEnqueueNamingTheLimit(String label, String json, String constraint,
      String limit) throws Exception {
    try (Connection c = db.connectAs(PRODUCER, PASSWORD)) {
      ServerErrors one = ServerErrors.of(() -> {
        try (PreparedStatement ps = c.prepareStatement("SELECT pgtask.enqueue(kind => 'limits.sql', payload => ?::jsonb)")) {
          ps.setString(1, json);
          ps.executeQuery().close();
        }
      });
      assertThat(one.sqlState()).as("SQLSTATE for %s", label).isEqualTo("23514");
      assertThat(one.constraint()).as("the rule named for %s", label).isEqualTo(constraint);
      assertThat(one.message()).as("the message for %s names the limit", label).contains("pgtask.payload_limits()." + limit);
      ServerErrors batch = ServerErrors.of(() -> {
        try (PreparedStatement ps = c.prepareStatement("SELECT * FROM pgtask.enqueue_batch(kinds => ARRAY['limits.sql', "
            + "'limits.sql'], payloads => ARRAY['{}'::jsonb, ?::jsonb])")) {
          ps.setString(1, json);
          ps.executeQuery().close();
        }
      });
      assertThat(batch.constraint()).as("the rule named by a batch for %s", label).isEqualTo(constraint);
      assertThat(batch.message()).as("the batch's message").contains("(task 2 of 2)");
    }
    assertThat(count("kind = 'limits.sql'")).as("tasks stored").isZero();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("overLimit")
  void aPayloadAWorkerCannotReadIsRefusedAtJavaEnqueueNamingTheLimit(String label, String json, String constraint,
      String limit) throws Exception {
    InvalidTaskException one = catchThrowableOfType(InvalidTaskException.class,
        () -> pgtask.enqueue(NewTask.of("limits.java", json, TaskOptions.defaults())));
    assertThat(one).as("enqueue of %s", label).isNotNull();
    assertThat(one.constraint()).as("the rule named for %s", label).isEqualTo(constraint);
    InvalidTaskException batch = catchThrowableOfType(InvalidTaskException.class,
        () -> pgtask.enqueueAll(List.of(NewTask.of("limits.java", "{}", TaskOptions.defaults()),
            NewTask.of("limits.java", json, TaskOptions.defaults()))));
    assertThat(batch).as("batch with %s", label).isNotNull();
    assertThat(batch.constraint()).as("the rule named by the batch for %s", label).isEqualTo(constraint);
    assertThat(count("kind = 'limits.java'")).as("tasks stored").isZero();
  }

  /** A typed payload Jackson writes without complaint is still refused by the database's check. */
  record BigNumber(BigInteger n) implements TaskArgs {
    @Override
    public String kind() {
      return "limits.typed";
    }
  }

  @Test
  void aTypedPayloadWithATooLongNumberIsRefusedByTheDatabaseNamingTheLimit() throws Exception {
    BigNumber big = new BigNumber(new BigInteger("9".repeat(1200)));
    InvalidTaskException one = catchThrowableOfType(InvalidTaskException.class, () -> pgtask.enqueue(big));
    assertThat(one).as("enqueue of a 1200-digit number").isNotNull();
    assertThat(one.constraint()).as("the rule named").isEqualTo("task_payload_number_length");
    assertThat(one.getMessage()).as("the message names the limit")
        .contains("1200 digits").contains("pgtask.payload_limits().max_number_length");
    InvalidTaskException batch = catchThrowableOfType(InvalidTaskException.class,
        () -> pgtask.enqueueAll(List.of(NewTask.of(new BigNumber(BigInteger.ONE)), NewTask.of(big))));
    assertThat(batch.constraint()).as("the rule named by the batch").isEqualTo("task_payload_number_length");
    assertThat(count("kind = 'limits.typed'")).as("tasks stored").isZero();
  }

  @Test
  void aPayloadAtExactlyEveryLimitIsAccepted() throws Exception {
    try (Connection c = db.connectAs(PRODUCER, PASSWORD)) {
      for (String json : List.of(nested(PayloadLimits.MAX_DEPTH), number(PayloadLimits.MAX_NUMBER_LENGTH),
          "{\"n\":-0." + "1".repeat(PayloadLimits.MAX_NUMBER_LENGTH) + "}",
          name(PayloadLimits.MAX_NAME_LENGTH),
          string(PayloadLimits.MAX_STRING_LENGTH))) {
        try (PreparedStatement ps = c.prepareStatement("SELECT pgtask.enqueue(kind => 'limits.ok', payload => ?::jsonb)")) {
          ps.setString(1, json);
          ps.executeQuery().close();
        }
      }
    }
    assertThat(count("kind = 'limits.ok'")).as("tasks stored at exactly the limits").isEqualTo(5);
  }

  @Test
  void theDatabaseAndTheWorkersMapperUseTheSameLimits() throws Exception {
    try (Connection c = db.connect(); PreparedStatement ps = c.prepareStatement("SELECT * FROM pgtask.payload_limits()");
        ResultSet rs = ps.executeQuery()) {
      rs.next();
      assertThat(List.of(rs.getInt("max_depth"), rs.getInt("max_number_length"), rs.getInt("max_name_length"),
          rs.getInt("max_string_length")))
          .as("pgtask.payload_limits() against PayloadLimits")
          .containsExactly(PayloadLimits.MAX_DEPTH, PayloadLimits.MAX_NUMBER_LENGTH, PayloadLimits.MAX_NAME_LENGTH,
              PayloadLimits.MAX_STRING_LENGTH);
    }
    ObjectMapper mapper = PgTaskWorker.defaultObjectMapper();
    StreamReadConstraints read = mapper.getFactory().streamReadConstraints();
    assertThat(List.of(read.getMaxNestingDepth(), read.getMaxNumberLength(), read.getMaxNameLength(),
        read.getMaxStringLength()))
        .as("the default mapper's read limits")
        .containsExactly(PayloadLimits.MAX_DEPTH, PayloadLimits.MAX_NUMBER_LENGTH, PayloadLimits.MAX_NAME_LENGTH,
            PayloadLimits.MAX_STRING_LENGTH);
    assertThat(mapper.getFactory().streamWriteConstraints().getMaxNestingDepth())
        .as("the default mapper's write depth").isEqualTo(PayloadLimits.MAX_DEPTH);
  }

  private static long count(String where) throws Exception {
    try (Connection c = db.connect()) {
      return queryLong(c, "SELECT count(*) FROM pgtask.task WHERE " + where);
    }
  }
}
