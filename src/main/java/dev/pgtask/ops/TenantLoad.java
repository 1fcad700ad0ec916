package dev.pgtask.ops;

import java.math.BigDecimal;

/**
 * One tenant's load over the recent window: a row of {@code pgtask.tenant_load}, busiest first.
 *
 * @param tenant the tenant's name
 * @param arrivalsPerMin tasks enqueued per minute
 * @param completionsPerMin tasks completed per minute
 * @param meanRunS mean run time of its completed tasks, in seconds, or null
 * @param p95RunS 95th percentile of that run time, in seconds, or null
 * @param utilisation arrivals times mean run time per minute, divided by the tenant's slots N (its
 *     limit's max_running, 1 without one: a tenant runs N tasks at a time): at 1 or more the backlog
 *     can only grow, or null
 * @param backlog its tasks waiting to run
 * @param backlogTrendPerMin how fast the backlog grows (positive) or shrinks, per minute
 * @param rateWindowMin the window the rates are measured over, in minutes
 */
public record TenantLoad(String tenant, BigDecimal arrivalsPerMin, BigDecimal completionsPerMin, BigDecimal meanRunS,
    BigDecimal p95RunS, BigDecimal utilisation, long backlog, BigDecimal backlogTrendPerMin,
    BigDecimal rateWindowMin) {}
