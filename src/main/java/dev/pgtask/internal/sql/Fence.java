package dev.pgtask.internal.sql;

import static dev.pgtask.internal.sql.gen.Tables.TASK;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import org.jooq.Condition;
import org.jooq.Field;
import org.jooq.JSONB;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;

/**
 * The identity of one claim, the fencing token: every write of a task row by the worker that
 * claimed it is conditioned on the row still being running, owned by {@code owner}, at
 * {@code attempt}. A stale worker's statement matches no row, and it abandons the task. The
 * static parts are how the statements of this package state that condition, for one task or for
 * many of one owner in one statement.
 */
public record Fence(long id, String owner, int attempt) {

  /** This fence as a condition on {@code pgtask.task}. */
  Condition condition() {
    return TASK.ID.eq(id)
        .and(TaskSql.runningById(TASK))
        .and(TASK.OWNER.eq(owner))
        .and(TASK.ATTEMPT.eq(attempt));
  }

  /**
   * The attempt this worker holds for a row found by {@code id = ANY(ids)}: looked up in a JSON
   * object {"id": attempt, ...} bound as the named parameter {@code attempts} (binary search over
   * its sorted keys). Not a join with unnest(ids, attempts): when the statistics say no task is
   * running, the planner joins that way with a nested loop over every pair (a batch of 500 took
   * 60 ms instead of 8); and not array_position, which is linear per row.
   */
  static Field<Integer> heldAttempt() {
    return heldAttempt(DSL.param("attempts", SQLDataType.JSONB), TASK.ID);
  }

  /** As {@link #heldAttempt()}, with the map {@code attempts} and the row's id {@code id}. */
  static Field<Integer> heldAttempt(Field<JSONB> attempts, Field<Long> id) {
    return DSL.field("({0} ->> {1})::integer", SQLDataType.INTEGER, attempts, id.cast(SQLDataType.CLOB));
  }

  /**
   * The {"id": attempt, ...} value of {@link #heldAttempt()}, bound as jsonb: bound as text, the
   * server would parse it again for every row it filters.
   */
  static org.postgresql.util.PGobject attemptMap(List<Fence> fences) throws SQLException {
    org.postgresql.util.PGobject value = new org.postgresql.util.PGobject();
    value.setType("jsonb");
    value.setValue(attemptJson(fences));
    return value;
  }

  /** {@link #attemptMap} as text. */
  static String attemptJson(List<Fence> fences) {
    StringBuilder json = new StringBuilder(fences.size() * 16).append('{');
    for (int i = 0; i < fences.size(); i++) {
      if (i > 0) {
        json.append(',');
      }
      json.append('"').append(fences.get(i).id()).append("\":").append(fences.get(i).attempt());
    }
    return json.append('}').toString();
  }

  /** The ids of {@code fences}, as the {@code ids} parameter of {@link TaskSql#opaqueIds()}. */
  static java.sql.Array idArray(Connection connection, List<Fence> fences) throws SQLException {
    Long[] ids = new Long[fences.size()];
    for (int i = 0; i < ids.length; i++) {
      ids[i] = fences.get(i).id();
    }
    return connection.createArrayOf("bigint", ids);
  }
}
