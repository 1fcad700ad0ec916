package dev.pgtask.ops;

import java.time.Instant;

/**
 * A limit and what it admits now: a row of {@code pgtask.limits} (docs/operations.md).
 *
 * @param scope {@code tenant}, {@code queue} or {@code kind}
 * @param key the tenant's, queue's or kind's name
 * @param maxRunning how many of its tasks may run at once (a tenant with a rate only: 1; a queue or kind with a rate only: 0, none)
 * @param running its tasks in state running (claimed ahead of a free executor too)
 * @param slotsHeld its slots held right now by task transactions (from {@code pg_locks}): never above maxRunning
 * @param waiting its queued tasks (due or not)
 * @param oldestWaitingSince the run_at of its oldest due queued task, or null without one
 * @param stuck its running tasks whose lease has run out (their worker is gone; the rescue pass takes them back)
 * @param updatedAt when it was last set
 * @param updatedBy the database role that set it
 * @param perSecond its rate (starts a second), or null without one
 * @param burst its rate's burst, or null without a rate
 * @param tokens the starts its rate admits now, or null without a rate
 * @param nextTokenAt when its rate's next token is due while it has none, else null
 * @param weight a tenant's weight in fair share, or null (1)
 */
public record LimitStatus(String scope, String key, int maxRunning, long running, long slotsHeld, long waiting,
    Instant oldestWaitingSince, long stuck, Instant updatedAt, String updatedBy, java.math.BigDecimal perSecond,
    Integer burst, Integer tokens, Instant nextTokenAt, java.math.BigDecimal weight) {}
