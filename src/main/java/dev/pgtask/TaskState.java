package dev.pgtask;

import java.util.Locale;

/**
 * The states of a task, as the {@code pgtask.tasks} view shows them.
 *
 * <pre>
 *   enqueue ──► SCHEDULED ──(run_at reached)──► AVAILABLE ──claim──► RUNNING ──► COMPLETED
 *                                                   ▲                 │  │
 *                                                   │      error, attempts left
 *                                                   └──── RETRYABLE ◄─┘  └─ error, no attempts left ─► DISCARDED
 *   any unfinished state ──cancel──► CANCELLED
 *   WAITING: queued behind its tenant's head in its queue; becomes the head (AVAILABLE,
 *            SCHEDULED or RETRYABLE) when the head leaves
 * </pre>
 */
public enum TaskState {
  /**
   * Waiting for its parent tasks ({@link TaskOptions#withDependsOn}): not claimable until its last
   * parent completes (or {@code pgtask.release_task} releases it).
   */
  PENDING,
  /** Waiting for its {@code run_at}, which lies in the future. */
  SCHEDULED,
  /**
   * Queued behind its tenant's head task in its queue (tenant-fair claiming): not claimable until
   * the head finishes, stops running, or is deferred, and it is handed the head.
   */
  WAITING,
  /** Ready to be claimed by a worker. */
  AVAILABLE,
  /** Claimed by a worker and executing. */
  RUNNING,
  /** Failed; waiting for its next attempt at {@code run_at}. */
  RETRYABLE,
  /** Finished successfully. */
  COMPLETED,
  /** Cancelled by an operator or the application. */
  CANCELLED,
  /** Given up on: attempts exhausted, or discarded by its handler. */
  DISCARDED;

  /** Whether the task has reached a final state. */
  public boolean isFinished() {
    return this == COMPLETED || this == CANCELLED || this == DISCARDED;
  }

  /** The lower-case name used in SQL ({@code pgtask.tasks.state}). */
  public String sqlName() {
    return name().toLowerCase(Locale.ROOT);
  }

  /** Parses a state as written in SQL, e.g. {@code "retryable"}. */
  public static TaskState fromSql(String name) {
    return valueOf(name.toUpperCase(Locale.ROOT));
  }
}
