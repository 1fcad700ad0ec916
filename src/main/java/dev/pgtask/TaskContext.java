package dev.pgtask;

import com.fasterxml.jackson.databind.JsonNode;
import java.sql.Connection;
import java.time.Instant;
import java.util.Map;
import org.jooq.DSLContext;

/** What a handler knows about the task it runs, and the transaction it runs in. */
public interface TaskContext {

  /** The task's id. */
  long taskId();

  /** The task's kind. */
  String kind();

  /** The task's queue. */
  String queue();

  /** The task's tenant, or {@code null}. */
  String tenant();

  /**
   * This attempt's number, starting at 1. It is also the fencing token for your own writes: an
   * attempt that runs after this one never has a lower number, so reject writes that carry a lower
   * attempt than the one already recorded. It can carry the same number only when this attempt gave
   * it back without committing anything (the worker released the task at shutdown, or deferred it
   * because its tenant was busy), or when a server crash lost the claim of this attempt (claims
   * commit without waiting for their WAL flush); a snooze raises max_attempts instead and keeps the
   * number. See docs/failure-modes.md.
   */
  int attempt();

  /** The task's maximum number of attempts. */
  int maxAttempts();

  /**
   * A key that is the same for every attempt of this task ({@code "pgtask-<id>"}): pass it to
   * external services as an idempotency key so a retried task does not repeat their effect.
   */
  String idempotencyKey();

  /** The id of the worker running the task (also in {@code application_name}). */
  String workerId();

  /** When this attempt must finish (database clock at claim + task timeout). */
  Instant deadline();

  /** The raw payload. */
  JsonNode payload();

  /**
   * The task transaction's connection: write through it so effects commit with the task. Do not
   * commit, roll back or close it. Throws {@link IllegalStateException} for plain-mode kinds.
   */
  Connection connection();

  /** A jOOQ {@link DSLContext} over {@link #connection()}. */
  DSLContext dsl();

  /**
   * Stores a small JSON result with the task, in the task's transaction: it is kept if the task
   * completes (a later call replaces it; a failed attempt's result is rolled back with it), and its
   * children read it ({@link #parentResults()}, SQL {@code pgtask.parent_results(child_id)}). A
   * {@code JsonNode} is stored as it is; anything else is serialized with Jackson's defaults.
   * At most 64 KiB of JSON text: a larger result is refused with {@link InvalidTaskException}
   * {@code task_result_size}, and nothing is stored (the transaction goes on). Transactional mode
   * only: a plain-mode kind gets {@link IllegalStateException}.
   */
  default void setResult(Object result) {
    throw new UnsupportedOperationException("setResult");
  }

  /**
   * The results of this task's parents ({@link TaskOptions#withDependsOn}), by parent id in id
   * order: a completed parent's result, or {@code null} (no result, not completed: a failed parent
   * under {@link ParentFailure#RUN}, or deleted). Empty for a task without parents. Read in the
   * task's transaction; transactional mode only, like {@link #setResult}.
   */
  default Map<Long, JsonNode> parentResults() {
    throw new UnsupportedOperationException("parentResults");
  }
}
