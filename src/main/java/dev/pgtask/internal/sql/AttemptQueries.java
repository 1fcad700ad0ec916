package dev.pgtask.internal.sql;

import static dev.pgtask.internal.sql.gen.Tables.TASK;
import static dev.pgtask.internal.sql.gen.Tables.TASK_ATTEMPT;

import dev.pgtask.internal.sql.gen.enums.TaskState;
import dev.pgtask.internal.sql.gen.tables.records.TaskRecord;
import dev.pgtask.internal.sql.gen.Keys;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.jooq.CommonTableExpression;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.Record1;
import org.jooq.ResultQuery;
import org.jooq.Table;
import org.jooq.UpdateConditionStep;
import org.jooq.impl.DSL;

/**
 * The attempt history ({@code pgtask.task_attempt}, db/V7__attempt_history.sql), written in the
 * same statement as the outcome it records: the outcome's fenced UPDATE of the task row becomes a
 * data-modifying CTE, and the statement inserts the attempt's row for the task it changed (none when
 * the fence matched nothing) and deletes that task's attempts {@link #KEPT_PER_TASK} or more numbers
 * older. One round trip, under the locks the outcome's statement holds; the row is durable exactly
 * when the outcome is.
 */
public final class AttemptQueries {

  /** The attempts kept per task: an attempt this many numbers older than the latest recorded one is deleted. */
  public static final int KEPT_PER_TASK = 25;

  /** The history's outcome of an attempt the rescue pass found with its worker gone. */
  public static final String WORKER_LOST = "worker_lost";

  private static final String ERROR = "attempt_error", DETAIL = "attempt_detail";

  private AttemptQueries() {}

  /**
   * {@code update} (an UPDATE of task rows, preceded by the CTEs in {@code before}) with the attempt
   * of each row it changed recorded: its number, owner and start as the row has them after the
   * update; outcome {@code outcome} (a field over the updated row's state; null: no row for it, as
   * for a task put back in the queue); the error's first line and full text, {@code error} and
   * {@code detail}, evaluated in the update's RETURNING clause (so they may use the updated row and
   * the update's FROM). Returns the updated rows' new states ({@link #state}). Locks: what
   * {@code update} locks, and the attempt rows it writes and deletes (the updated tasks' own).
   */
  public static ResultQuery<Record1<TaskState>> recorded(DSLContext dsl, List<CommonTableExpression<?>> before,
      UpdateConditionStep<TaskRecord> update, Function<Field<TaskState>, Field<String>> outcome,
      Field<String> error, Field<String> detail) {
    Table<?> u = DSL.table(DSL.name("u"));
    CommonTableExpression<?> updated = DSL.name("u").as(update.returningResult(TASK.ID, TASK.ATTEMPT, TASK.OWNER,
        TASK.ATTEMPTED_AT, TASK.STATE, error.as(ERROR), detail.as(DETAIL)));
    Field<Long> id = DSL.field(DSL.name("u", TASK.ID.getName()), Long.class);
    Field<Integer> attempt = DSL.field(DSL.name("u", TASK.ATTEMPT.getName()), Integer.class);
    Field<TaskState> state = DSL.field(DSL.name("u", TASK.STATE.getName()), TASK.STATE.getDataType());
    Field<String> outcomeOf = outcome.apply(state);
    var insert = DSL.name("a").as(DSL.insertInto(TASK_ATTEMPT,
            TASK_ATTEMPT.TASK_ID, TASK_ATTEMPT.ATTEMPT, TASK_ATTEMPT.WORKER, TASK_ATTEMPT.STARTED_AT,
            TASK_ATTEMPT.FINISHED_AT, TASK_ATTEMPT.OUTCOME, TASK_ATTEMPT.ERROR, TASK_ATTEMPT.ERROR_DETAIL)
        .select(DSL.select(id, attempt,
                DSL.field(DSL.name("u", TASK.OWNER.getName()), String.class),
                DSL.field(DSL.name("u", TASK.ATTEMPTED_AT.getName()), TASK.ATTEMPTED_AT.getDataType()),
                TaskSql.clockTimestamp(), outcomeOf,
                // the first line, as the one-line column promises
                DSL.function("split_part", String.class, DSL.field(DSL.name("u", ERROR), String.class),
                    DSL.inline("\n"), DSL.inline(1)),
                DSL.field(DSL.name("u", DETAIL), String.class))
            .from(u).where(outcomeOf.isNotNull()))
        .onConflictOnConstraint(Keys.TASK_ATTEMPT_PKEY)
        .doUpdate()
        .set(TASK_ATTEMPT.WORKER, DSL.excluded(TASK_ATTEMPT.WORKER))
        .set(TASK_ATTEMPT.STARTED_AT, DSL.excluded(TASK_ATTEMPT.STARTED_AT))
        .set(TASK_ATTEMPT.FINISHED_AT, DSL.excluded(TASK_ATTEMPT.FINISHED_AT))
        .set(TASK_ATTEMPT.OUTCOME, DSL.excluded(TASK_ATTEMPT.OUTCOME))
        .set(TASK_ATTEMPT.ERROR, DSL.excluded(TASK_ATTEMPT.ERROR))
        .set(TASK_ATTEMPT.ERROR_DETAIL, DSL.excluded(TASK_ATTEMPT.ERROR_DETAIL))
        .returningResult(TASK_ATTEMPT.ATTEMPT));
    // the task's attempts KEPT_PER_TASK or more numbers older than the one recorded: by the primary key
    var old = DSL.name("d").as(DSL.deleteFrom(TASK_ATTEMPT)
        .using(u)
        .where(TASK_ATTEMPT.TASK_ID.eq(id))
        .and(TASK_ATTEMPT.ATTEMPT.le(attempt.minus(DSL.inline(KEPT_PER_TASK))))
        .and(outcomeOf.isNotNull())
        .returningResult(TASK_ATTEMPT.ATTEMPT));
    List<CommonTableExpression<?>> ctes = new ArrayList<>(before);
    ctes.add(updated);
    ctes.add(insert);
    ctes.add(old);
    return dsl.with(ctes).select(state.as(TASK.STATE.getName())).from(u);
  }

  /** {@link #recorded} with no CTE before the update, and the error's texts given. */
  public static ResultQuery<Record1<TaskState>> recorded(DSLContext dsl, UpdateConditionStep<TaskRecord> update,
      Function<Field<TaskState>, Field<String>> outcome, String error, String detail) {
    return recorded(dsl, List.of(), update, outcome, DSL.val(error, String.class), DSL.val(detail, String.class));
  }

  /** The outcome of a failure's attempt by the state it left the task in. */
  public static Field<String> failedBy(Field<TaskState> state) {
    return DSL.when(state.eq(DSL.inline(TaskState.cancelled)), DSL.inline("cancelled"))
        .when(state.eq(DSL.inline(TaskState.discarded)), DSL.inline("discarded"))
        .when(state.eq(DSL.inline(TaskState.retryable)), DSL.inline("failed"));
  }

  /** An attempt is recorded only when it ended the task cancelled (a put-back records nothing). */
  public static Field<String> cancelledOnly(Field<TaskState> state) {
    return DSL.when(state.eq(DSL.inline(TaskState.cancelled)), DSL.inline("cancelled"));
  }

  /** Reads the state a {@link #recorded} statement returned (null: fenced out). */
  public static TaskState state(Record1<TaskState> r) {
    return r == null ? null : r.value1();
  }
}
