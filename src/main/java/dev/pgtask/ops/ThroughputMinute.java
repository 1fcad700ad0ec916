package dev.pgtask.ops;

import java.time.Instant;

/**
 * The tasks that finished in one minute: a row of {@code pgtask.throughput}. Counts only what
 * retention has not yet removed.
 *
 * @param minute the minute's start (database clock)
 * @param completed tasks completed in it
 * @param discarded tasks discarded in it
 * @param cancelled tasks cancelled in it
 */
public record ThroughputMinute(Instant minute, long completed, long discarded, long cancelled) {}
