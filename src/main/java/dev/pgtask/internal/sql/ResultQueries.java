package dev.pgtask.internal.sql;

import static dev.pgtask.internal.sql.gen.Tables.TASK;
import static dev.pgtask.internal.sql.gen.Tables.TASK_DEPENDENCY;

import dev.pgtask.internal.sql.gen.enums.TaskState;
import dev.pgtask.internal.sql.gen.tables.Task;
import java.sql.Connection;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jooq.JSONB;
import org.jooq.impl.DSL;

/**
 * A task's result and its parents' results (V10__dependencies.sql, db/R__03b_dependencies.sql):
 * written by the running task in its own transaction, read by its children.
 */
public final class ResultQueries {

  /** The largest result, in bytes of its JSON text as the database writes it (the constraint task_result_size). */
  public static final int MAX_RESULT_BYTES = 65536;

  private ResultQueries() {}

  /**
   * The size of {@code json} as the database stores it (bytes of {@code jsonb::text}), measured
   * before writing it, so that a result too large is refused without aborting the task's
   * transaction. Locks: none.
   */
  public static int resultBytes(Connection tx, String json) {
    return Sql.using(tx).select(DSL.field("octet_length({0}::jsonb::text)", Integer.class, DSL.val(json)))
        .fetchOne().value1();
  }

  /**
   * Stores {@code json} as the result of the task {@code f} fences (its running attempt), in the
   * task's transaction: it commits with the task's completion or not at all. Returns whether the
   * fence matched. Locks: the task row (already held by the executing transaction).
   */
  public static boolean storeResult(Connection tx, Fence f, String json) {
    return Sql.using(tx).update(TASK)
        .set(TASK.RESULT, JSONB.valueOf(json))
        .where(TASK.ID.eq(f.id()))
        .and(TASK.OWNER.eq(f.owner()))
        .and(TASK.ATTEMPT.eq(f.attempt()))
        .and(TASK.STATE.eq(DSL.inline(TaskState.running)))
        .execute() == 1;
  }

  /**
   * The results of a task's parents, by parent id in id order: the JSON text of a completed
   * parent's result, or null (not completed, no result, or deleted). Locks: none.
   */
  public static Map<Long, String> parentResults(Connection tx, long childId) {
    Task p = TASK.as("p");
    Map<Long, String> out = new LinkedHashMap<>();
    Sql.using(tx).select(TASK_DEPENDENCY.PARENT_ID, p.RESULT)
        .from(TASK_DEPENDENCY)
        .leftJoin(p).on(p.ID.eq(TASK_DEPENDENCY.PARENT_ID))
        .where(TASK_DEPENDENCY.CHILD_ID.eq(childId))
        .orderBy(TASK_DEPENDENCY.PARENT_ID)
        .forEach(r -> out.put(r.value1(), r.value2() == null ? null : r.value2().data()));
    return out;
  }
}
