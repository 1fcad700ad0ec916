package dev.pgtask.internal.sql;

import static dev.pgtask.internal.sql.gen.Tables.TASK;

import dev.pgtask.internal.sql.gen.enums.TaskState;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.jooq.Condition;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.JSONB;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.jooq.types.DayToSecond;

/**
 * The outcomes of an attempt other than its completion ({@link CompletionQueries}): a failure
 * (retry or discard), a put-back, a snooze, a cancellation, each fenced ({@link Fence}) and each
 * ending the task cancelled instead when a cancel request stands for the attempt
 * ({@link TaskSql#cancelRequested()}); and the put-back of what a worker's claims left without a
 * holder ({@link #releaseOrphans}).
 */
public final class OutcomeQueries {

  private OutcomeQueries() {}

  /**
   * Puts back the tasks claimed by {@code owner} that it does not hold any more ({@code held}
   * excluded) and that no transaction has locked: what a claim whose answer was lost, or a worker
   * stopping after such a claim, leaves behind. Their attempt is given back; a task with a cancel
   * request for that attempt ends cancelled. Returns how many. Locks: those rows (SKIP LOCKED).
   */
  public static int releaseOrphans(DSLContext dsl, String owner, java.util.Collection<Long> held) {
    var o = TASK.as("o");
    Condition cancel = TaskSql.cancelRequested();
    Field<JSONB> entry = DSL.function("jsonb_build_array", SQLDataType.JSONB,
        DSL.function("jsonb_build_object", SQLDataType.JSONB,
            DSL.inline("attempt"), TASK.ATTEMPT, DSL.inline("at"), TaskSql.clockTimestamp(),
            DSL.inline("error"), DSL.inline(TaskSql.CANCELLED_AS_REQUESTED), DSL.inline("worker"), TASK.OWNER));
    return dsl.update(TASK)
        .set(TASK.STATE, DSL.when(cancel, DSL.inline(TaskState.cancelled)).otherwise(DSL.inline(TaskState.available)))
        .set(TASK.ATTEMPT, DSL.when(cancel, TASK.ATTEMPT).otherwise(TASK.ATTEMPT.minus(1)))
        .set(TASK.OWNER, DSL.when(cancel, TASK.OWNER).otherwise(DSL.inline((String) null)))
        .set(TASK.FINISHED_AT, DSL.when(cancel, TaskSql.clockTimestamp()).otherwise(TASK.FINISHED_AT))
        .set(TASK.ERRORS, DSL.when(cancel, DSL.function("jsonb_concat", SQLDataType.JSONB,
            DSL.coalesce(TASK.ERRORS, DSL.inline(JSONB.valueOf("[]"))), entry)).otherwise(TASK.ERRORS))
        .setNull(TASK.LEASE_UNTIL)
        .where(TASK.ID.in(DSL.select(o.ID).from(o)
            .where(o.STATE.eq(DSL.inline(TaskState.running)))
            .and(o.OWNER.eq(owner))
            .and(held.isEmpty() ? DSL.trueCondition() : o.ID.notIn(held))
            .forNoKeyUpdate()
            .skipLocked()))
        .execute();
  }

  /**
   * Records a failed attempt: appends to the error history, and either schedules the retry after
   * {@code retryDelay} from the moment it is written (database clock, clock_timestamp: the
   * transaction may have started long before the attempt ended) or discards the task when {@code discard} or the attempts
   * are exhausted; or ends it cancelled when a cancellation was requested during this attempt.
   * The attempt is recorded in the attempt history in the same statement ({@link AttemptQueries}),
   * with {@code error} (its first line) and {@code detail}, the full text. Returns the new state,
   * or {@code null} when fenced out. Locks: the task row.
   */
  public static TaskState fail(DSLContext dsl, Fence f, String error, String detail, Duration retryDelay,
      boolean discard) {
    return fail(dsl, f, error, detail, TaskSql.clockTimestamp().plus(DSL.val(DayToSecond.valueOf(retryDelay))), discard);
  }

  /** {@link #fail} with the retry at {@code retryAt}, an instant the handler chose. */
  public static TaskState failUntil(DSLContext dsl, Fence f, String error, String detail, Instant retryAt,
      boolean discard) {
    return fail(dsl, f, error, detail, DSL.val(retryAt, TASK.RUN_AT), discard);
  }

  private static TaskState fail(DSLContext dsl, Fence f, String error, String detail, Field<Instant> retryAt,
      boolean discard) {
    Condition giveUp = discard ? DSL.trueCondition() : TASK.ATTEMPT.ge(TASK.MAX_ATTEMPTS);
    Condition cancel = TaskSql.cancelRequested();
    Condition ends = cancel.or(giveUp);
    var update = dsl.update(TASK)
        .set(TASK.STATE, DSL.when(cancel, DSL.inline(TaskState.cancelled))
            .when(giveUp, DSL.inline(TaskState.discarded)).otherwise(DSL.inline(TaskState.retryable)))
        .set(TASK.RUN_AT, DSL.when(ends, TASK.RUN_AT).otherwise(retryAt))
        .set(TASK.FINISHED_AT, DSL.when(ends, TaskSql.clockTimestamp()).otherwise(DSL.inline((Instant) null)))
        .set(TASK.ERRORS, DSL.when(cancel, appendError(f, error, TaskSql.CANCELLED_AS_REQUESTED))
            .otherwise(appendError(f, error)))
        .setNull(TASK.LEASE_UNTIL)
        .where(f.condition());
    return AttemptQueries.state(AttemptQueries.recorded(dsl, update, AttemptQueries::failedBy, error, detail).fetchOne());
  }

  /**
   * Puts a task back without spending an attempt (tenant lock busy, or the worker is stopping
   * before/while running it): available again after {@code delay}, attempt given back; or ends it
   * cancelled when a cancellation was requested during this attempt. Returns the new state, or
   * {@code null} when fenced out. Locks: the task row.
   */
  public static TaskState release(DSLContext dsl, Fence f, Duration delay) {
    Condition cancel = TaskSql.cancelRequested();
    var q = backInTheQueue(dsl, f, cancel)
        .set(TASK.ATTEMPT, DSL.when(cancel, TASK.ATTEMPT).otherwise(TASK.ATTEMPT.minus(1)));
    if (!delay.isZero()) {
      q = q.set(TASK.RUN_AT, later(cancel, delay));
    }
    return AttemptQueries.state(AttemptQueries.recorded(dsl, q.where(f.condition()), AttemptQueries::cancelledOnly,
        TaskSql.CANCELLED_AS_REQUESTED, null).fetchOne());
  }

  /**
   * Snoozes a task its handler asked to run later: available after {@code delay}, the attempt is
   * not counted against max_attempts (max_attempts + 1, so attempt numbers keep increasing); or
   * ends it cancelled when a cancellation was requested during this attempt. Returns the new
   * state, or {@code null} when fenced out. Locks: the task row.
   */
  public static TaskState snooze(DSLContext dsl, Fence f, Duration delay) {
    Condition cancel = TaskSql.cancelRequested();
    var update = backInTheQueue(dsl, f, cancel)
        .set(TASK.MAX_ATTEMPTS, DSL.when(cancel, TASK.MAX_ATTEMPTS).otherwise(TASK.MAX_ATTEMPTS.plus(1)))
        .set(TASK.RUN_AT, later(cancel, delay))
        .where(f.condition());
    return AttemptQueries.state(AttemptQueries.recorded(dsl, update, AttemptQueries::cancelledOnly,
        TaskSql.CANCELLED_AS_REQUESTED, null).fetchOne());
  }

  /**
   * What a release and a snooze set alike: available again, without an owner or lease; or, when
   * {@code cancel} holds, cancelled now with the request's entry in the error history.
   */
  private static org.jooq.UpdateSetMoreStep<dev.pgtask.internal.sql.gen.tables.records.TaskRecord> backInTheQueue(
      DSLContext dsl, Fence f, Condition cancel) {
    return dsl.update(TASK)
        .set(TASK.STATE, DSL.when(cancel, DSL.inline(TaskState.cancelled)).otherwise(DSL.inline(TaskState.available)))
        .set(TASK.OWNER, DSL.when(cancel, TASK.OWNER).otherwise(DSL.inline((String) null)))
        .set(TASK.FINISHED_AT, DSL.when(cancel, TaskSql.clockTimestamp()).otherwise(TASK.FINISHED_AT))
        .set(TASK.ERRORS, DSL.when(cancel, appendError(f, TaskSql.CANCELLED_AS_REQUESTED)).otherwise(TASK.ERRORS))
        .setNull(TASK.LEASE_UNTIL);
  }

  /**
   * {@code delay} from the moment the outcome is written, on the database clock (clock_timestamp:
   * not the transaction's start, which may be long before the attempt ended), or run_at unchanged
   * when {@code cancel} holds.
   */
  private static Field<Instant> later(Condition cancel, Duration delay) {
    return DSL.when(cancel, TASK.RUN_AT).otherwise(TaskSql.clockTimestamp().plus(DSL.val(DayToSecond.valueOf(delay))));
  }

  /** Marks a running task cancelled (its handler was stopped). Locks: the task row. */
  public static int cancelled(DSLContext dsl, Fence f, String reason) {
    var update = dsl.update(TASK)
        .set(TASK.STATE, DSL.inline(TaskState.cancelled))
        .set(TASK.FINISHED_AT, TaskSql.clockTimestamp())
        .set(TASK.ERRORS, appendError(f, reason))
        .setNull(TASK.LEASE_UNTIL)
        .where(f.condition());
    return AttemptQueries.recorded(dsl, update, AttemptQueries::cancelledOnly, reason, null).fetch().size();
  }

  /** The error history with one entry per message appended, each for this attempt. */
  private static Field<JSONB> appendError(Fence f, String... errors) {
    List<Field<?>> entries = new java.util.ArrayList<>();
    for (String error : errors) {
      entries.add(DSL.function("jsonb_build_object", SQLDataType.JSONB,
          DSL.inline("attempt"), DSL.val(f.attempt()),
          DSL.inline("at"), TaskSql.clockTimestamp(),
          DSL.inline("error"), DSL.val(error),
          DSL.inline("worker"), DSL.val(f.owner())));
    }
    Field<JSONB> entry = DSL.function("jsonb_build_array", SQLDataType.JSONB, entries.toArray(new Field<?>[0]));
    return DSL.function("jsonb_concat", SQLDataType.JSONB,
        DSL.coalesce(TASK.ERRORS, DSL.inline(JSONB.valueOf("[]"))), entry);
  }
}
