package dev.pgtask.schedule;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgtask.InvalidScheduleException;
import dev.pgtask.PgTask;
import dev.pgtask.Schedule;
import dev.pgtask.ScheduleInfo;
import dev.pgtask.TaskArgs;
import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.QueueDatabase;
import dev.pgtask.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.postgresql.util.PSQLException;

/**
 * Declaring schedules (SQL and Java) and what one firing pass (pgtask.fire_schedules) does, against
 * the real server, without a worker: missed fires are made by back-dating a schedule in the
 * database (as if no worker had run), so no test waits for a clock.
 */
class ScheduleTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("schedules", 12);

  record Report(String period) implements TaskArgs {
    @Override
    public String kind() {
      return "report.build";
    }
  }

  Db sql;
  PgTask pgtask;

  @BeforeEach
  void clean() throws SQLException {
    sql = queue.sql();
    pgtask = queue.pgtask();
    sql.exec("DELETE FROM pgtask.schedule");
    sql.exec("DELETE FROM pgtask.task");
    sql.exec("DELETE FROM pgtask.paused_queue");
  }

  /** Moves a schedule's next fire back by {@code interval}, as if no worker had fired it since. */
  void backdate(String name, String interval) throws SQLException {
    sql.exec("UPDATE pgtask.schedule SET next_fire_at = next_fire_at - interval '" + interval + "', "
        + "next_due_at = next_fire_at - interval '" + interval + "' WHERE name = '" + name + "'");
  }

  int fire() throws SQLException {
    return (int) sql.count("SELECT fired FROM pgtask.fire_schedules()");
  }

  long missedFires(String name, String until) throws SQLException {
    return sql.count("SELECT count(*) FROM pgtask.task WHERE schedule_name = '" + name + "' AND schedule_fire_at <= '"
        + until + "'::timestamptz");
  }

  /** The fires of {@code name} enqueued for instants before {@code instant}. */
  long firesBefore(String name, String instant) throws SQLException {
    return sql.count("SELECT count(*) FROM pgtask.task WHERE schedule_name = '" + name + "' AND schedule_fire_at < '"
        + instant + "'::timestamptz");
  }

  List<String> fireInstants(String name) throws SQLException {
    return sql.rows("SELECT schedule_fire_at FROM pgtask.task WHERE schedule_name = '" + name + "' ORDER BY schedule_fire_at");
  }

  static SQLException sqlError(Connection c, String statement) {
    try (PreparedStatement ps = c.prepareStatement(statement)) {
      ps.executeQuery().close();
    } catch (SQLException e) {
      return e;
    }
    throw new AssertionError("expected an error from " + statement);
  }

  @Test
  void declaringIsAnIdempotentUpsertThatReturnsTheNextFireTime() throws SQLException {
    String first = sql.text("SELECT pgtask.schedule('hourly-report', '0 * * * *', 'report.build', '{\"p\": 1}')");
    String updatedAt = sql.text("SELECT updated_at FROM pgtask.schedule WHERE name = 'hourly-report'");
    String again = sql.text("SELECT pgtask.schedule('hourly-report', '0 * * * *', 'report.build', '{\"p\": 1}')");
    assertThat(again).as("the same declaration again").isEqualTo(first);
    assertThat(sql.text("SELECT updated_at FROM pgtask.schedule WHERE name = 'hourly-report'"))
        .as("a repeated declaration changes nothing").isEqualTo(updatedAt);
    assertThat(sql.text("SELECT next_fire_at FROM pgtask.schedules WHERE name = 'hourly-report'")).isEqualTo(first);
    assertThat(sql.count("SELECT count(*) FROM pgtask.schedule")).isEqualTo(1);
    assertThat(sql.text("SELECT date_trunc('hour', now()) + interval '1 hour' = '" + first + "'::timestamptz")).isEqualTo("t");

    Instant next = pgtask.schedule(Schedule.of("java-report", "0 0 * * * *", new Report("hour")));
    assertThat(pgtask.schedule(Schedule.of("java-report", "0 0 * * * *", new Report("hour")))).isEqualTo(next);
    ScheduleInfo info = pgtask.schedules().stream().filter(s -> s.name().equals("java-report")).findFirst().orElseThrow();
    assertThat(info.kind()).isEqualTo("report.build");
    assertThat(info.payloadJson()).isEqualTo("{\"period\": \"hour\"}");
    assertThat(info.nextFireAt()).isEqualTo(next);
    assertThat(info.timeZone()).isEqualTo("UTC");
    assertThat(info.paused()).isFalse();
  }

  @Test
  void anInvalidCronOrTimeZoneIsRefusedFromSqlAndJavaAndNothingIsStored() throws SQLException {
    try (Connection c = queue.pool().getConnection()) {
      SQLException badCron = sqlError(c, "SELECT pgtask.schedule('s', '61 * * * *', 'k')");
      assertThat(badCron.getSQLState()).isEqualTo("23514");
      assertThat(((PSQLException) badCron).getServerErrorMessage().getConstraint()).isEqualTo("schedule_cron");
      assertThat(badCron.getMessage()).contains("pgtask: invalid schedule: cron expression \"61 * * * *\": minute field: 61 is out of range 0-59");
      SQLException badZone = sqlError(c, "SELECT pgtask.schedule('s', '* * * * *', 'k', time_zone => 'Mars/Olympus')");
      assertThat(((PSQLException) badZone).getServerErrorMessage().getConstraint()).isEqualTo("schedule_time_zone");
      assertThat(badZone.getMessage()).contains("time zone \"Mars/Olympus\" is not a time zone name");
      assertThat(sqlError(c, "SELECT pgtask.schedule('s', '* * * * *', 'k', time_zone => 'UTC+3')").getMessage())
          .contains("is not a time zone name");
      assertThat(sqlError(c, "SELECT pgtask.schedule('s', '* * * * *', 'k', queue => 'no spaces')").getMessage())
          .contains("queue may contain only");
      assertThat(sqlError(c, "SELECT pgtask.schedule('s', '* * * * *', 'k', payload => '[1]')").getMessage())
          .contains("payload must be a JSON object");
      assertThat(sqlError(c, "SELECT pgtask.schedule('s', '* * * * *', 'k', catch_up => -1)").getMessage())
          .contains("catch_up must be between 0 and 1000");
    }
    // Java declarations: the database parses the cron expression, its refusal comes back with its message
    assertThatThrownBy(() -> pgtask.schedule(Schedule.of("s", "* * * *", "k")))
        .isInstanceOf(InvalidScheduleException.class).hasMessage("pgtask: invalid schedule: cron expression \"* * * *\" "
            + "has 4 fields; expected 5 (minute hour day-of-month month day-of-week) or 6 (second first)")
        .extracting(e -> ((InvalidScheduleException) e).constraint()).isEqualTo("schedule_cron");
    assertThatThrownBy(() -> pgtask.schedule(Schedule.of("s", "0 0 L * *", "k"))).isInstanceOf(InvalidScheduleException.class)
        .hasMessageContaining("L, W and # are not supported");
    assertThatThrownBy(() -> pgtask.schedule(Schedule.of("s", "61 * * * *", "k"))).isInstanceOf(InvalidScheduleException.class)
        .hasMessage("pgtask: invalid schedule: cron expression \"61 * * * *\": minute field: 61 is out of range 0-59");
    assertThatThrownBy(() -> Schedule.of("s", "* * * * *", "k").withZone("Mars/Olympus"))
        .isInstanceOf(InvalidScheduleException.class).hasMessageContaining("is not a time zone name");
    assertThatThrownBy(() -> Schedule.of("s", "* * * * *", "k").withZone("+02:00"))
        .isInstanceOf(InvalidScheduleException.class).hasMessageContaining("is an offset");
    assertThatThrownBy(() -> pgtask.schedule(Schedule.of("s", "* * * * *", "k").withQueue("no spaces")))
        .isInstanceOf(InvalidScheduleException.class)
        .extracting(e -> ((InvalidScheduleException) e).constraint()).isEqualTo("task_queue_format");
    assertThatThrownBy(() -> pgtask.schedule(Schedule.of("s", "* * * * *", "k").withPayload("[1, 2]")))
        .isInstanceOf(InvalidScheduleException.class).hasMessageContaining("payload must be a JSON object");
    assertThat(sql.count("SELECT count(*) FROM pgtask.schedule")).as("schedules stored").isZero();
    assertThat(sql.count("SELECT count(*) FROM pgtask.task")).isZero();
  }

  @Test
  void missedFiresAreSkippedByDefault() throws SQLException {
    sql.exec("SELECT pgtask.schedule('daily', '@daily', 'k')");
    backdate("daily", "3 days");
    assertThat(fire()).as("tasks enqueued for three missed days").isZero();
    assertThat(sql.text("SELECT last_missed_at = date_trunc('day', now()) FROM pgtask.schedules")).isEqualTo("t");
    assertThat(sql.text("SELECT next_fire_at = date_trunc('day', now()) + interval '1 day' FROM pgtask.schedules"))
        .as("skipped to the next fire").isEqualTo("t");
  }

  @Test
  void missedFiresCatchUpAtMostNOfTheLatest() throws SQLException {
    sql.exec("SELECT pgtask.schedule('daily', '@daily', 'k', catch_up => 2)");
    backdate("daily", "5 days");
    assertThat(fire()).isEqualTo(2);
    assertThat(sql.text("SELECT array_agg(schedule_fire_at ORDER BY schedule_fire_at) = "
        + "ARRAY[date_trunc('day', now()) - interval '1 day', date_trunc('day', now())] FROM pgtask.task"))
        .as("the two latest missed days").isEqualTo("t");
    assertThat(sql.text("SELECT last_missed_at = date_trunc('day', now()) - interval '2 days' FROM pgtask.schedules"))
        .as("the older ones are recorded as missed").isEqualTo("t");
  }

  @Test
  void aLateFireWithinTheGraceIsOnTimeAndTheOnesBeforeItAreMissed() throws SQLException {
    sql.exec("SELECT pgtask.schedule('often', '*/2 * * * * *', 'k')");
    backdate("often", "10 minutes");
    assertThat(fire()).as("only the latest fire (less than the one-minute grace late)").isEqualTo(1);
    assertThat(sql.text("SELECT now() - schedule_fire_at < interval '3 seconds' FROM pgtask.task")).isEqualTo("t");

    sql.exec("SELECT pgtask.schedule('often', '*/2 * * * * *', 'k', catch_up => 3, allow_overlap => true)");
    sql.exec("DELETE FROM pgtask.task");
    backdate("often", "10 minutes");
    assertThat(fire()).as("the latest fire and the 3 missed ones before it").isEqualTo(4);
    // float8: extract() is double precision before PostgreSQL 14 and numeric from 14 on
    List<String> gaps = sql.rows("SELECT extract(epoch FROM schedule_fire_at - lag(schedule_fire_at) OVER (ORDER BY schedule_fire_at))::float8 "
        + "FROM pgtask.task ORDER BY schedule_fire_at");
    assertThat(gaps.subList(1, 4)).as("consecutive fires").containsOnly("2");
  }

  @Test
  void firesWhileTheQueueIsPausedAreMissedAndCaughtUpWhenItResumes() throws SQLException {
    sql.exec("SELECT pgtask.schedule('caught', '*/2 * * * * *', 'k', queue => 'reports', catch_up => 2, allow_overlap => true)");
    sql.exec("SELECT pgtask.schedule('skipped', '*/2 * * * * *', 'k', queue => 'reports')");
    sql.exec("INSERT INTO pgtask.paused_queue (queue) VALUES ('reports')");
    backdate("caught", "20 seconds");
    backdate("skipped", "20 seconds");
    assertThat(fire()).as("nothing is enqueued into a paused queue").isZero();
    assertThat(sql.rows("SELECT name || ':' || missed_pending || ':' || queue_paused FROM pgtask.schedules ORDER BY name"))
        .containsExactly("caught:2:true", "skipped:0:true");
    assertThat(sql.text("SELECT last_missed_at IS NOT NULL FROM pgtask.schedules WHERE name = 'skipped'")).isEqualTo("t");

    // the fires missed while paused are the instants before each schedule's next fire as the paused
    // fire left it; a */2 instant may pass between that fire and the resume's (a regular fire, due
    // then, not a missed one), so the missed ones are told apart by the schedule's own next fire (a
    // clock read by the test was not exact: an instant passing before it counted a regular fire as
    // missed, 3 of 2 in a CI run)
    String caughtNext = sql.text("SELECT next_fire_at FROM pgtask.schedule WHERE name = 'caught'");
    String skippedNext = sql.text("SELECT next_fire_at FROM pgtask.schedule WHERE name = 'skipped'");
    sql.exec("DELETE FROM pgtask.paused_queue");
    assertThat(sql.text("SELECT pgtask.schedule_next_due_in() <= interval '0'")).as("due at once after the resume").isEqualTo("t");
    assertThat(fire()).as("the two missed fires kept for catch-up (and any fire due since)").isGreaterThanOrEqualTo(2);
    assertThat(firesBefore("caught", caughtNext)).as("caught up").isEqualTo(2);
    assertThat(firesBefore("skipped", skippedNext)).as("not caught up").isZero();
    assertThat(sql.count("SELECT missed_pending FROM pgtask.schedules WHERE name = 'caught'")).isZero();
  }

  @Test
  void aFireIsSkippedWhileThePreviousTaskIsUnfinishedUnlessOverlapIsAllowed() throws SQLException {
    sql.exec("SELECT pgtask.schedule('single', '* * * * * *', 'k')");
    sql.exec("SELECT pgtask.schedule('overlapping', '* * * * * *', 'k', allow_overlap => true)");
    backdate("single", "1 second");
    backdate("overlapping", "1 second");
    assertThat(fire()).isEqualTo(2);
    // nobody runs the tasks: they stay available (unfinished). Back-dating reopens fire instants that
    // already have a task (the unique index would refuse a second one): move those tasks away first
    sql.exec("UPDATE pgtask.task SET schedule_fire_at = schedule_fire_at - interval '1 hour'");
    backdate("single", "5 seconds");
    backdate("overlapping", "5 seconds");
    fire();
    assertThat(fireInstants("single")).as("skipped: its previous task is unfinished").hasSize(1);
    assertThat(sql.count("SELECT overlapped FROM pgtask.schedules WHERE name = 'single'")).isEqualTo(1);
    assertThat(fireInstants("overlapping")).as("allowed to overlap").hasSize(2);

    sql.exec("UPDATE pgtask.task SET state = 'completed', finished_at = now() WHERE schedule_name = 'single'");
    sql.exec("UPDATE pgtask.task SET schedule_fire_at = schedule_fire_at - interval '1 hour'");
    backdate("single", "5 seconds");
    fire();
    assertThat(fireInstants("single")).as("fires again once the previous task finished").hasSize(2);
  }

  @Test
  void aPausedScheduleFiresNothingAndResumesFromTheNextFireAfterNow() throws SQLException {
    pgtask.schedule(Schedule.of("p", "*/2 * * * * *", "k"));
    assertThat(pgtask.pauseSchedule("p")).isTrue();
    backdate("p", "30 seconds");
    assertThat(fire()).isZero();
    assertThat(sql.text("SELECT paused FROM pgtask.schedules")).isEqualTo("t");
    String resumedAt = sql.text("SELECT clock_timestamp()");
    assertThat(pgtask.resumeSchedule("p")).isTrue();
    assertThat(sql.text("SELECT next_fire_at > now() FROM pgtask.schedules")).as("the fires while paused are not made up")
        .isEqualTo("t");
    // a */2 instant may pass between the resume and this fire (a regular fire, due then): the fires made up
    // would be those due before the resume
    fire();
    assertThat(missedFires("p", resumedAt)).as("no fire due while paused is enqueued").isZero();
    assertThat(pgtask.pauseSchedule("nope")).isFalse();
    assertThat(pgtask.resumeSchedule("nope")).isFalse();
  }

  @Test
  void changingTheCronKeepsTheSchedulesHistory() throws SQLException {
    pgtask.schedule(Schedule.of("h", "*/2 * * * * *", "k"));
    backdate("h", "2 seconds");
    assertThat(fire()).isEqualTo(1);
    String before = sql.text("SELECT last_fire_at || ' ' || last_task_id || ' ' || fired FROM pgtask.schedules");
    Instant next = pgtask.schedule(Schedule.of("h", "0 0 12 * * *", "k"));
    ScheduleInfo info = pgtask.schedules().get(0);
    assertThat(info.cron()).isEqualTo("0 0 12 * * *");
    assertThat(info.nextFireAt()).isEqualTo(next);
    assertThat(sql.text("SELECT extract(hour FROM next_fire_at AT TIME ZONE 'UTC') FROM pgtask.schedules")).isEqualTo("12");
    assertThat(sql.text("SELECT last_fire_at || ' ' || last_task_id || ' ' || fired FROM pgtask.schedules"))
        .as("last fire, last task and count after the change").isEqualTo(before);
    assertThat(info.lastTaskState()).isEqualTo("available");
  }

  @Test
  void jitterDelaysTheFireButNotItsIdentity() throws SQLException {
    pgtask.schedule(Schedule.of("j", "0 * * * * *", "k").withJitter(Duration.ofSeconds(30)));
    assertThat(sql.text("SELECT next_due_at >= next_fire_at AND next_due_at <= next_fire_at + interval '30 seconds' "
        + "FROM pgtask.schedule")).isEqualTo("t");
    sql.exec("UPDATE pgtask.schedule SET next_fire_at = date_trunc('minute', now()), next_due_at = now() + interval '1 hour'");
    assertThat(fire()).as("fire time passed, jittered due time not").isZero();
    sql.exec("UPDATE pgtask.schedule SET next_due_at = now()");
    assertThat(fire()).isEqualTo(1);
    assertThat(sql.text("SELECT schedule_fire_at = date_trunc('minute', now()) FROM pgtask.task"))
        .as("the task's fire instant is the cron's").isEqualTo("t");
  }

  @Test
  void aSecondTaskForOneFireIsImpossibleHoweverManyCallersFireAtOnce() throws Exception {
    pgtask.schedule(Schedule.of("race", "* * * * * *", "k").withCatchUp(20).withAllowOverlap());
    backdate("race", "15 seconds");
    int callers = 8;
    ExecutorService pool = Executors.newFixedThreadPool(callers);
    CountDownLatch start = new CountDownLatch(1);
    List<Future<Integer>> results = new ArrayList<>();
    for (int i = 0; i < callers; i++) {
      results.add(pool.submit(() -> {
        start.await();
        try (Connection c = queue.pool().getConnection(); PreparedStatement ps = c.prepareStatement(
            "SELECT fired FROM pgtask.fire_schedules()"); ResultSet rs = ps.executeQuery()) {
          rs.next();
          return rs.getInt(1);
        }
      }));
    }
    start.countDown();
    int total = 0;
    for (Future<Integer> f : results) {
      total += f.get();
    }
    pool.shutdown();
    long tasks = sql.count("SELECT count(*) FROM pgtask.task WHERE schedule_name = 'race'");
    assertThat(tasks).as("tasks").isEqualTo(total).isBetween(15L, 18L);
    assertThat(sql.count("SELECT count(DISTINCT schedule_fire_at) FROM pgtask.task")).as("distinct fire instants").isEqualTo(tasks);
    try (Connection c = queue.pool().getConnection()) {
      SQLException dup = sqlError(c, "INSERT INTO pgtask.task (kind, schedule_name, schedule_fire_at) "
          + "SELECT kind, schedule_name, schedule_fire_at FROM pgtask.task LIMIT 1 RETURNING id");
      assertThat(dup.getSQLState()).as("a second task for one fire").isEqualTo("23505");
    }
  }

  @Test
  void unscheduleRemovesTheScheduleAndKeepsItsTasks() throws SQLException {
    pgtask.schedule(Schedule.of("u", "* * * * * *", "k"));
    backdate("u", "2 seconds");
    fire();
    assertThat(pgtask.unschedule("u")).isTrue();
    assertThat(pgtask.unschedule("u")).isFalse();
    assertThat(pgtask.schedules()).isEmpty();
    assertThat(sql.count("SELECT count(*) FROM pgtask.task")).isEqualTo(1);
  }

  @Test
  void aProducerRoleCannotDeclareSchedules() throws SQLException {
    String role = "sched_producer_" + Long.toHexString(System.nanoTime());
    TestDatabase.execAdmin("CREATE ROLE " + role + " LOGIN PASSWORD 'p'");
    try {
      sql.exec("SELECT pgtask.grant_producer('" + role + "')");
      try (Connection c = queue.database().connectAs(role, "p")) {
        assertThat(sqlError(c, "SELECT pgtask.schedule('x', '* * * * *', 'k')").getSQLState()).isEqualTo("42501");
        assertThat(sqlError(c, "SELECT * FROM pgtask.schedules").getSQLState()).isEqualTo("42501");
        assertThat(sqlError(c, "SELECT * FROM pgtask.fire_schedules()").getSQLState()).isEqualTo("42501");
      }
    } finally {
      sql.exec("DROP OWNED BY " + role);
      TestDatabase.execAdmin("DROP ROLE " + role);
    }
  }
}
