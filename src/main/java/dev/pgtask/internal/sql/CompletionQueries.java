package dev.pgtask.internal.sql;

import static dev.pgtask.internal.sql.gen.Tables.TASK;

import dev.pgtask.internal.sql.gen.enums.TaskState;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import org.jooq.impl.DSL;

/**
 * The completions of claimed tasks: fenced ({@link Fence}), many of one owner in one statement
 * whose shape does not depend on the count, with the task transaction's commit
 * ({@link #completeAllAndCommit}) or on their own for plain-mode tasks ({@link #completeAll}).
 */
public final class CompletionQueries {

  private CompletionQueries() {}

  // fenced completion of a batch: one statement shape whatever the batch size
  private static final PreparedQuery COMPLETE_ALL = PreparedQuery.of(completeAllQuery());

  private static org.jooq.UpdateConditionStep<?> completeAllQuery() {
    return DSL.update(TASK)
        .set(TASK.STATE, DSL.inline(TaskState.completed))
        .set(TASK.FINISHED_AT, TaskSql.clockTimestamp())
        .set(TASK.LEASE_UNTIL, DSL.inline((java.time.Instant) null, TASK.LEASE_UNTIL))
        .where(TASK.ID.eq(DSL.any(TaskSql.opaqueIds())))
        .and(TASK.ATTEMPT.eq(Fence.heldAttempt()))
        .and(TaskSql.runningById(TASK))
        .and(TASK.OWNER.eq(DSL.param("owner", String.class)));
  }

  /**
   * The transaction-local setting naming the queues of the worker whose completion statement runs
   * ({@code ,q1,q2,}; empty for none): the hand-off triggers send no wake-up notification for a
   * task they make claimable in one of them, because that worker claims after its commit itself
   * (db/R__02a_wakeup.sql, "A worker's own hand-offs wake only itself"; {@code HandOffWake}).
   */
  public static final String WORKER_QUEUES_SETTING = "pgtask.worker_queues";

  /** {@link #WORKER_QUEUES_SETTING}'s value for a worker of {@code queues}. */
  public static String workerQueues(List<String> queues) {
    return queues.isEmpty() ? "" : "," + String.join(",", queues) + ",";
  }

  // the completion of a worker's task transaction: as COMPLETE_ALL, with WORKER_QUEUES_SETTING set
  // for the hand-off triggers it fires (read once, before the rows, as an InitPlan)
  private static final PreparedQuery COMPLETE_OWN = PreparedQuery.of(completeAllQuery()
      .and(DSL.field(DSL.select(TaskSql.setLocal(WORKER_QUEUES_SETTING, DSL.param("worker_queues", String.class))))
          .isNotNull()));

  // the completions and the commit in one round trip
  private static final PreparedQuery COMPLETE_ALL_AND_COMMIT = COMPLETE_OWN.followedBy("COMMIT");
  // the last task's deferred constraints checked and its savepoint released, then as above
  private static final PreparedQuery CHECK_RELEASE_COMPLETE_ALL_AND_COMMIT =
      COMPLETE_ALL_AND_COMMIT.precededBy(TaskSql.CHECK_DEFERRED + ";\n" + TaskSql.RELEASE_SAVEPOINT);
  private static final PreparedQuery RELEASE_COMPLETE_ALL_AND_COMMIT =
      COMPLETE_ALL_AND_COMMIT.precededBy(TaskSql.RELEASE_SAVEPOINT);

  /** What to send before the completions of {@link #completeAllAndCommit}. */
  public enum Before {
    /** Nothing: no savepoint is open. */
    NOTHING,
    /** Release the open savepoint of the last task. */
    RELEASE,
    /** Check the deferred constraints inside the open savepoint, then release it. */
    CHECK_AND_RELEASE
  }

  /**
   * {@link #completeAll} and COMMIT of the transaction, pipelined (with what {@code before} says
   * first): one round trip. Returns the completed count. The rows are locked by this transaction
   * since the execution re-locked them, so the fence cannot fail here; a failed statement throws,
   * the statements after it are skipped, and nothing was committed (a failure before the
   * completions leaves the savepoint open in an aborted transaction).
   */
  public static int completeAllAndCommit(Connection tx, List<Fence> fences, Before before,
      String workerQueues) throws SQLException {
    if (fences.isEmpty()) {
      if (before != Before.NOTHING) {
        try (Statement st = tx.createStatement()) {
          st.execute(before == Before.RELEASE ? TaskSql.RELEASE_SAVEPOINT
              : TaskSql.CHECK_DEFERRED + "; " + TaskSql.RELEASE_SAVEPOINT);
        }
      }
      tx.commit();
      return 0;
    }
    PreparedQuery query = switch (before) {
      case NOTHING -> COMPLETE_ALL_AND_COMMIT;
      case RELEASE -> RELEASE_COMPLETE_ALL_AND_COMMIT;
      case CHECK_AND_RELEASE -> CHECK_RELEASE_COMPLETE_ALL_AND_COMMIT;
    };
    try (PreparedStatement ps = query.prepare(tx, Map.of("ids", Fence.idArray(tx, fences),
        "attempts", Fence.attemptMap(fences), "owner", fences.get(0).owner(), "worker_queues", workerQueues))) {
      ps.execute();
      // past the update counts of what was sent before the completions
      for (int skip = before == Before.NOTHING ? 0 : before == Before.RELEASE ? 1 : 2; skip > 0; skip--) {
        ps.getMoreResults();
      }
      return ps.getUpdateCount();
    }
  }

  /**
   * Marks several tasks of one owner completed in one statement, each fenced by its attempt.
   * Locks: the task rows (already held by a transactional execution; plain-mode tasks are
   * unlocked and only the fence protects them).
   */
  public static int completeAll(Connection connection, List<Fence> fences) throws SQLException {
    if (fences.isEmpty()) {
      return 0;
    }
    try (PreparedStatement ps = COMPLETE_ALL.prepare(connection, Map.of("ids", Fence.idArray(connection, fences),
        "attempts", Fence.attemptMap(fences), "owner", fences.get(0).owner()))) {
      return ps.executeUpdate();
    }
  }
}
