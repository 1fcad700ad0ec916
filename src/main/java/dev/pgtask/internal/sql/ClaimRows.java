package dev.pgtask.internal.sql;

import static dev.pgtask.internal.sql.gen.Tables.TASK;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.OffsetDateTime;
import org.jooq.JSONB;

/**
 * The claim's rows as the executor needs them: each column of the claim statements
 * ({@link ClaimStatements}) read by its name.
 */
final class ClaimRows {

  private ClaimRows() {}

  /** The claim's column: how many rows its locking select returned (the same on every row). */
  static final String LOCKED_ROWS = "locked_rows";
  /** The claim's column: the task's tenant's name. */
  static final String TENANT_NAME = "tenant_name";
  /** The claim's column: the rate limits the task was charged a token of (NULL without any rate). */
  static final String CHARGED = "charged";
  /** The claim's column: milliseconds until a rate limit's next token, or NULL when none waits. */
  static final String NEXT_TOKEN_MS = "next_token_ms";
  /** The claim's column: rows its limits admit that it left for want of an idle executor. */
  static final String HELD_FOR_ROOM = "held_for_room";
  /** The claim's column: a queue or kind concurrency limit applies to the task. */
  static final String CAPPED = "capped";
  /** The claim's column: whether any flow control is set (the unlimited claim takes nothing then). */
  static final String LIMITS_EXIST = "limits_exist";
  /** The claim-and-start's column: the id of the task whose re-lock follows, or NULL. */
  static final String HEAD_ID = "head_id";

  /** A claimed task, from the current row of a claim's result set. */
  static ClaimQueries.Claimed claimed(ResultSet rs) throws SQLException {
    int tenant = rs.getInt(TASK.TENANT_ID.getName());
    Integer tenantId = rs.wasNull() ? null : tenant;
    return new ClaimQueries.Claimed(rs.getLong(TASK.ID.getName()), rs.getString(TASK.KIND.getName()),
        rs.getString(TASK.QUEUE.getName()), JSONB.valueOf(rs.getString(TASK.PAYLOAD.getName())), tenantId,
        rs.getString(TENANT_NAME), rs.getInt(TASK.ATTEMPT.getName()), rs.getInt(TASK.MAX_ATTEMPTS.getName()),
        instant(rs, TASK.RUN_AT.getName()), instant(rs, TASK.ATTEMPTED_AT.getName()),
        rs.getString(TASK.TRACE_PARENT.getName()), rs.getBoolean(CAPPED), charged(rs));
  }

  private static int[] charged(ResultSet rs) throws SQLException {
    java.sql.Array a = rs.getArray(CHARGED);
    if (a == null) {
      return NONE;
    }
    Integer[] ids = (Integer[]) a.getArray();
    int[] out = new int[ids.length];
    for (int i = 0; i < ids.length; i++) {
      out[i] = ids[i];
    }
    return out;
  }

  private static final int[] NONE = new int[0];

  /** Rows the claim's limits admit that it left for want of an idle executor. */
  static int heldForRoom(ResultSet rs) throws SQLException {
    return rs.getInt(HELD_FOR_ROOM);
  }

  /** Whether any flow control was set in the claim's snapshot. */
  static boolean limitsExist(ResultSet rs) throws SQLException {
    return rs.getBoolean(LIMITS_EXIST);
  }

  /** Milliseconds until a rate limit's next token, or null when no task waits for one. */
  static Long nextTokenMillis(ResultSet rs) throws SQLException {
    long ms = rs.getLong(NEXT_TOKEN_MS);
    return rs.wasNull() ? null : ms;
  }

  /** Whether the current row names a claimed task (the claim-and-start's one row without a claim has none). */
  static boolean hasTask(ResultSet rs) throws SQLException {
    rs.getLong(TASK.ID.getName());
    return !rs.wasNull();
  }

  /** How many rows the claim's locking select returned. */
  static int lockedRows(ResultSet rs) throws SQLException {
    return rs.getInt(LOCKED_ROWS);
  }

  /** The id of the claim's head (its first transactional task), or null without one. */
  static Long headId(ResultSet rs) throws SQLException {
    long head = rs.getLong(HEAD_ID);
    return rs.wasNull() ? null : head;
  }

  private static Instant instant(ResultSet rs, String column) throws SQLException {
    return rs.getObject(column, OffsetDateTime.class).toInstant();
  }

  /** Moves to the claim's result set, past the update counts of the statements sent before it. */
  static void firstResultSet(PreparedStatement ps) throws SQLException {
    boolean resultSet = ps.execute();
    while (!resultSet) {
      if (ps.getUpdateCount() == -1) {
        throw new IllegalStateException("the claim returned no result set");
      }
      resultSet = ps.getMoreResults();
    }
  }
}
