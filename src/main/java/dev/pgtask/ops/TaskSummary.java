package dev.pgtask.ops;

import java.time.Instant;

/**
 * A task as operators see it: a row of {@code pgtask.tasks}.
 *
 * @param id the task's id
 * @param kind its kind
 * @param queue its queue
 * @param tenant its tenant, or null
 * @param state its state as operators name it: {@code scheduled}, {@code waiting} (behind its
 *     tenant's head), {@code available}, {@code running}, {@code retryable}, {@code completed},
 *     {@code cancelled} or {@code discarded}
 * @param priority its priority (lower runs first)
 * @param attempt the attempts made so far
 * @param maxAttempts the attempts it may make
 * @param runAt when it is (or was) due
 * @param createdAt when it was enqueued
 * @param finishedAt when it finished, or null
 * @param lastError the last entry of its error history (none for a completed task), or null
 */
public record TaskSummary(long id, String kind, String queue, String tenant, String state, int priority, int attempt,
    int maxAttempts, Instant runAt, Instant createdAt, Instant finishedAt, String lastError) {}
