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

  Instant schedule(Schedule schedule) {
    Objects.requireNonNull(schedule, "schedule");
    try {
      return Schedules.declare(dsl, payloads.objectMapper(), schedule);
    } catch (RuntimeException e) {
      throw Failures.of("schedule", e);
    }
  }

  boolean unschedule(String name) {
    try {
      return ScheduleQueries.unschedule(dsl, name);
    } catch (RuntimeException e) {
      throw Failures.of("unschedule", e);
    }
  }

  boolean pause(String name) {
    try {
      return ScheduleQueries.pause(dsl, name);
    } catch (RuntimeException e) {
      throw Failures.of("pause schedule", e);
    }
  }

  boolean resume(String name) {
    try {
      return ScheduleQueries.resume(dsl, name);
    } catch (RuntimeException e) {
      throw Failures.of("resume schedule", e);
    }
  }

  List<ScheduleInfo> list() {
    try {
      return Schedules.list(dsl);
    } catch (RuntimeException e) {
      throw Failures.of("list schedules", e);
    }
  }
}
