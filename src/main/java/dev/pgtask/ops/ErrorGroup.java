package dev.pgtask.ops;

import java.time.Instant;

/**
 * The tasks that failed the same way: a row of {@code pgtask.error_groups}, the retryable and
 * discarded tasks of one kind whose last error starts with the same first line.
 *
 * @param kind the tasks' kind
 * @param error the first line of their last error
 * @param tasks how many tasks
 * @param retryable how many of them wait for a retry
 * @param discarded how many of them were discarded
 * @param firstSeen the earliest last activity of these tasks (finished, else last started)
 * @param lastSeen the latest
 */
public record ErrorGroup(String kind, String error, long tasks, long retryable, long discarded, Instant firstSeen,
    Instant lastSeen) {}
