package dev.pgtask.internal.sql;

import static dev.pgtask.internal.sql.gen.Tables.SCHEDULES;

import dev.pgtask.internal.sql.gen.Routines;
import dev.pgtask.internal.sql.gen.routines.FireSchedules;
import dev.pgtask.internal.sql.gen.tables.records.SchedulesRecord;
import java.time.Duration;
import java.time.Instant;
import org.jooq.DSLContext;
import org.jooq.JSONB;
import org.jooq.Result;
import org.jooq.types.YearToSecond;

/** Schedules: declaration, firing and the view, through the functions of R__05a_schedules. */
public final class ScheduleQueries {

  private ScheduleQueries() {}

  /** What a firing pass did: tasks enqueued, and how long until the next schedule is due (null: none is). */
  public record Fired(int fired, Duration nextDueIn) {}

  /** Declares or changes a schedule; returns its next fire instant. Locks: the schedule row. */
  public static Instant schedule(DSLContext dsl, String name, String cron, String kind, String payloadJson,
      String queue, String tenant, String timeZone, int catchUp, boolean allowOverlap, Duration jitter,
      int priority, int maxAttempts) {
    return Routines.schedule(dsl.configuration(), name, cron, kind, JSONB.valueOf(payloadJson), queue, tenant,
        timeZone, catchUp, allowOverlap, YearToSecond.valueOf(jitter), priority, maxAttempts);
  }

  /** Removes a schedule; returns whether it existed. Locks: the schedule row. */
  public static boolean unschedule(DSLContext dsl, String name) {
    return Boolean.TRUE.equals(Routines.unschedule(dsl.configuration(), name));
  }

  /** Pauses a schedule; returns whether it exists. Locks: the schedule row. */
  public static boolean pause(DSLContext dsl, String name) {
    return Boolean.TRUE.equals(Routines.pauseSchedule(dsl.configuration(), name));
  }

  /** Resumes a schedule; returns whether it exists. Locks: the schedule row. */
  public static boolean resume(DSLContext dsl, String name) {
    return Boolean.TRUE.equals(Routines.resumeSchedule(dsl.configuration(), name));
  }

  /**
   * Fires every due schedule, in one transaction. Locks: each due schedule row (SKIP LOCKED: one
   * another worker is firing is left to it), and the task rows it inserts.
   */
  public static Fired fireDue(DSLContext dsl) {
    FireSchedules f = Routines.fireSchedules(dsl.configuration());
    return new Fired(f.getFired() == null ? 0 : f.getFired(), toDuration(f.getNextDueIn()));
  }

  /** How long until the next schedule is due (zero or negative: now; null: none is). Locks nothing. */
  public static Duration nextDueIn(DSLContext dsl) {
    return toDuration(Routines.scheduleNextDueIn(dsl.configuration()));
  }

  /** The view pgtask.schedules, by name. Locks nothing. */
  public static Result<SchedulesRecord> selectSchedules(DSLContext dsl) {
    return dsl.selectFrom(SCHEDULES).orderBy(SCHEDULES.NAME).fetch();
  }

  private static Duration toDuration(YearToSecond interval) {
    return interval == null ? null : interval.toDuration();
  }
}
