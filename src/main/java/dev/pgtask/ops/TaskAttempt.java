package dev.pgtask.ops;

import java.time.Instant;

/**
 * One recorded attempt of a task: a row of {@code pgtask.task_attempts}. pgtask records the attempts
 * that did not complete: failed (to be retried), discarded, cancelled while they ran, or lost with
 * their worker (found by the rescue pass); a task keeps its last 25 (docs/operations.md, "Attempt
 * history").
 *
 * @param attempt the attempt's number (1 for the first)
 * @param outcome {@code failed}, {@code discarded}, {@code cancelled} or {@code worker_lost}
 * @param worker the id of the worker that ran it, or null
 * @param startedAt when it was claimed (database clock), or null
 * @param finishedAt when its outcome was recorded (database clock)
 * @param error the error's first line, or null
 * @param errorDetail the error's full text: exception class, message, stack trace and causes, at
 *     most 16,384 characters (a longer one is cut, with a last line saying so); null when the
 *     failure had no exception (a timeout, a lost worker)
 */
public record TaskAttempt(int attempt, String outcome, String worker, Instant startedAt, Instant finishedAt,
    String error, String errorDetail) {}
