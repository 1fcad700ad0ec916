package dev.pgtask.schedule;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.pgtask.InvalidScheduleException;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.Schedule;
import dev.pgtask.internal.schedule.Scheduler;
import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.QueueDatabase;
import dev.pgtask.testsupport.WorkerFixture;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The worker's scheduler against the real server and the real clock, with second-level cron. */
class SchedulerTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("scheduler", 20);

  @RegisterExtension
  final WorkerFixture workers = WorkerFixture.on(queue).checkingLeaks();
  Db sql;

  @BeforeEach
  void clean() throws SQLException {
    sql = queue.sql();
    sql.exec("DELETE FROM pgtask.schedule");
    sql.exec("DELETE FROM pgtask.task");
  }

  @AfterEach
  void stop() throws SQLException {
    workers.closeAll(); // before the schedules go
    sql.exec("DELETE FROM pgtask.schedule");
  }

  PgTaskWorker start(PgTaskWorker.Builder b) {
    return workers.start(b);
  }

  PgTaskWorker.Builder worker() {
    return workers.builder().concurrency(2).pollInterval(PgTaskWorker.DEFAULT_POLL_INTERVAL)
        .handler("tick", (ctx, payload) -> { });
  }

  /** Seconds between each fire instant and its task's creation, in fire order. */
  List<Double> lateness() throws SQLException {
    return sql.doubles("SELECT extract(epoch FROM created_at - schedule_fire_at)::float8 FROM pgtask.task "
        + "WHERE schedule_name IS NOT NULL ORDER BY schedule_fire_at");
  }

  @Test
  void aWorkerWithInvalidSchedulesDoesNotStartNamesEachAndDeclaresNone() throws SQLException {
    // the database parses the cron expressions (there is no parser in Java): checked at start, all at once
    PgTaskWorker w = worker().schedule(Schedule.of("valid", "*/2 * * * * *", "tick"))
        .schedule(Schedule.of("bad-minute", "61 * * * *", "tick"))
        .schedule(Schedule.of("bad-fields", "* * * *", "tick")).build();
    workers.register(w);
    assertThatThrownBy(w::start).isInstanceOf(InvalidScheduleException.class)
        .hasMessage("pgtask: invalid schedules (none declared): \"bad-fields\": cron expression \"* * * *\" has 4 fields;"
            + " expected 5 (minute hour day-of-month month day-of-week) or 6 (second first); \"bad-minute\": cron"
            + " expression \"61 * * * *\": minute field: 61 is out of range 0-59")
        .extracting(e -> ((InvalidScheduleException) e).constraint()).isEqualTo("schedule_cron");
    assertThat(sql.count("SELECT count(*) FROM pgtask.schedule")).as("schedules declared").isZero();
    assertThat(w.listening()).as("the worker did not start").isFalse();

    PgTaskWorker one = worker().schedule(Schedule.of("bad-minute", "61 * * * *", "tick")).build();
    workers.register(one);
    assertThatThrownBy(one::start).as("a single invalid schedule: the database's own message")
        .isInstanceOf(InvalidScheduleException.class)
        .hasMessage("pgtask: invalid schedule: cron expression \"61 * * * *\": minute field: 61 is out of range 0-59");
  }

  @Test
  void severalWorkersEnqueueExactlyOneTaskPerFireWithinOneSecondOfItsTime() throws SQLException {
    start(worker().schedule(Schedule.of("every-2s", "*/2 * * * * *", "tick")));
    start(worker());
    start(worker());
    await("6 fires").atMost(Duration.ofSeconds(40)).pollInterval(Duration.ofMillis(200))
        .until(() -> sql.count("SELECT count(*) FROM pgtask.task WHERE schedule_name = 'every-2s'") >= 6);
    List<String> gaps = sql.rows("SELECT extract(epoch FROM schedule_fire_at - lag(schedule_fire_at) "
        + "OVER (ORDER BY schedule_fire_at))::int FROM pgtask.task ORDER BY schedule_fire_at");
    assertThat(gaps.subList(1, gaps.size())).as("one task per fire, none missing").containsOnly("2");
    assertThat(lateness()).as("seconds from fire time to enqueue").allSatisfy(l -> assertThat(l).isBetween(0.0, 1.0));
    await("the tasks ran").atMost(Duration.ofSeconds(20))
        .until(() -> sql.count("SELECT count(*) FROM pgtask.task WHERE state = 'completed'") >= 5);
  }

  @Test
  void aDeclarationWakesASchedulerWaitingForALaterFire() throws SQLException {
    // its only schedule fires yearly: without the notification the scheduler would sleep its full backstop
    PgTaskWorker w = start(worker().schedule(Schedule.of("yearly", "@yearly", "tick")));
    Scheduler scheduler = dev.pgtask.internal.WorkerAccess.runtime(w).scheduler();
    await().atMost(Duration.ofSeconds(10)).until(() -> scheduler.passes() >= 1);
    sql.exec("SELECT pgtask.schedule('soon', '*/2 * * * * *', 'tick')");
    await("a fire of the new schedule").atMost(Scheduler.MAX_SLEEP.dividedBy(4)).pollInterval(Duration.ofMillis(100))
        .until(() -> sql.count("SELECT count(*) FROM pgtask.task WHERE schedule_name = 'soon'") >= 2);
    assertThat(lateness()).allSatisfy(l -> assertThat(l).isBetween(0.0, 1.0));
  }

  @Test
  void betweenFiresTheSchedulerQueriesNothing() throws SQLException {
    // hourly, half an hour from now: "@hourly" fired in the middle of the quiet window when the test
    // ran at the top of the hour (a red CI run, 12:00:00)
    int minute = (java.time.ZonedDateTime.now(java.time.ZoneOffset.UTC).getMinute() + 30) % 60;
    PgTaskWorker w = start(worker().schedule(Schedule.of("hourly", "0 " + minute + " * * * *", "tick")));
    Scheduler scheduler = dev.pgtask.internal.WorkerAccess.runtime(w).scheduler();
    // the pass at start, and the read that the listener's first LISTEN asks for (it may connect later,
    // after its check that its own NOTIFY reaches it)
    await().atMost(Duration.ofSeconds(20)).until(() -> w.listening() && scheduler.passes() >= 1 && scheduler.reads() >= 1);
    long[] before = {scheduler.passes(), scheduler.reads()};
    await("6 s without a query").during(Duration.ofSeconds(6)).atMost(Duration.ofSeconds(8))
        .until(() -> scheduler.passes() == before[0] && scheduler.reads() == before[1]);
    sql.exec("SELECT pgtask.pause_schedule('hourly')");
    await("one read when told").atMost(Duration.ofSeconds(5)).until(() -> scheduler.reads() == before[1] + 1);
    assertThat(scheduler.passes()).isEqualTo(before[0]);
  }

  @Test
  void aPausedScheduleFiresNothingUntilResumed() throws SQLException {
    PgTaskWorker w = start(worker().schedule(Schedule.of("p", "* * * * * *", "tick")));
    await().atMost(Duration.ofSeconds(10)).until(() -> sql.count("SELECT count(*) FROM pgtask.task") >= 1);
    sql.exec("SELECT pgtask.pause_schedule('p')");
    // a fire that committed before the pause is counted here; none can commit after it
    long paused = sql.count("SELECT count(*) FROM pgtask.task");
    await("no fire while paused").during(Duration.ofSeconds(3)).atMost(Duration.ofSeconds(5))
        .until(() -> sql.count("SELECT count(*) FROM pgtask.task") == paused);
    long afterPause = sql.count("SELECT count(*) FROM pgtask.task");
    sql.exec("SELECT pgtask.resume_schedule('p')");
    await("fires again after the resume").atMost(Duration.ofSeconds(5))
        .until(() -> sql.count("SELECT count(*) FROM pgtask.task") >= afterPause + 2);
  }

  @Test
  void aFireWhoseTransactionDiesBeforeItsCommitIsFiredByAWorkerExactlyOnce() throws Exception {
    // every minute, its current minute's fire due now (as if the fire time had just come)
    sql.exec("SELECT pgtask.schedule('dying', '0 * * * * *', 'tick', catch_up => 1, allow_overlap => true)");
    sql.exec("UPDATE pgtask.schedule SET next_fire_at = date_trunc('minute', now()), next_due_at = now()");
    String instant = sql.text("SELECT next_fire_at FROM pgtask.schedule WHERE name = 'dying'");
    // a firing pass that dies before its commit: it inserted the task and holds the schedule row
    try (java.sql.Connection dying = queue.database().connect()) {
      dying.setAutoCommit(false);
      int pid;
      try (java.sql.Statement st = dying.createStatement()) {
        var rs = st.executeQuery("SELECT pg_backend_pid(), (SELECT fired FROM pgtask.fire_schedules())");
        rs.next();
        pid = rs.getInt(1);
        assertThat(rs.getInt(2)).as("tasks the dying pass inserted").isEqualTo(1);
      }
      PgTaskWorker w = start(worker());
      Scheduler scheduler = dev.pgtask.internal.WorkerAccess.runtime(w).scheduler();
      await("the worker tried while the row was held").atMost(Duration.ofSeconds(10)).until(() -> scheduler.passes() >= 2);
      assertThat(sql.count("SELECT count(*) FROM pgtask.task WHERE schedule_name = 'dying'"))
          .as("committed tasks while the dying pass holds the row").isZero();
      sql.exec("SELECT pg_terminate_backend(" + pid + ")");
    } catch (java.sql.SQLException expected) {
      // closing the terminated connection
    }
    await("the worker fires the instant").atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(50))
        .until(() -> sql.count("SELECT count(*) FROM pgtask.task WHERE schedule_fire_at = '" + instant + "'") >= 1);
    assertThat(sql.count("SELECT count(*) FROM pgtask.task WHERE schedule_fire_at = '" + instant + "'"))
        .as("tasks for the instant").isEqualTo(1);
  }

  @Test
  void aWorkerBuiltWithoutSchedulesFiresNothing() throws SQLException {
    PgTaskWorker w = start(worker().runSchedules(false).schedule(Schedule.of("declared", "* * * * * *", "tick")));
    assertThat(sql.count("SELECT count(*) FROM pgtask.schedule WHERE name = 'declared'")).as("still declared").isEqualTo(1);
    await("3 s without a fire").during(Duration.ofSeconds(3)).atMost(Duration.ofSeconds(5))
        .until(() -> sql.count("SELECT count(*) FROM pgtask.task") == 0);
    assertThat(dev.pgtask.internal.WorkerAccess.runtime(w).scheduler().passes()).isZero();
    start(worker()); // one that does
    await("a worker that runs schedules fires it").atMost(Duration.ofSeconds(20))
        .until(() -> sql.count("SELECT count(*) FROM pgtask.task") >= 1);
  }
}
