package dev.pgtask;

import dev.pgtask.internal.schedule.Schedules;
import dev.pgtask.internal.sql.ScheduleQueries;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import org.jooq.DSLContext;

/** {@link PgTask}'s schedule operations: declare, remove, pause, resume, list. */
final class ScheduleOperations {

  private final DSLContext dsl;
  private final Payloads payloads;

  ScheduleOperations(DSLContext dsl, Payloads payloads) {
    this.dsl = dsl;
    this.payloads = payloads;
  }

  /** Declares {@code schedule}; the database checks it (cron expression included). */
  Instant schedule(Schedule schedule) {
    Objects.requireNonNull(schedule, "schedule");
    return Failures.call("schedule", () -> Schedules.declare(dsl, payloads.objectMapper(), schedule));
  }

  boolean unschedule(String name) {
    return Failures.call("unschedule", () -> ScheduleQueries.unschedule(dsl, name));
  }

  boolean pause(String name) {
    return Failures.call("pause schedule", () -> ScheduleQueries.pause(dsl, name));
  }

  boolean resume(String name) {
    return Failures.call("resume schedule", () -> ScheduleQueries.resume(dsl, name));
  }

  List<ScheduleInfo> list() {
    return Failures.call("list schedules", () -> Schedules.list(dsl));
  }
}
