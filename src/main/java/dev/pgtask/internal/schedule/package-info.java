/**
 * Recurring tasks: the worker-side {@code Scheduler} and the declaration helpers.
 *
 * <p>Protocol. The database holds every schedule (pgtask.schedule) with its next fire instant and
 * the instant it is due (the fire instant plus that fire's jitter). {@code pgtask.fire_schedules()}
 * locks each due schedule row ({@code FOR UPDATE SKIP LOCKED}), inserts its task(s) and advances
 * the next fire instant, all in one transaction, and answers how long until the next schedule is
 * due; a unique index on (schedule, fire instant) of the task table refuses a second task for one
 * fire whatever happens. Every worker may call it: the database makes duplicates impossible, and a
 * worker that dies before its commit fires nothing (the next caller fires it). The
 * {@link dev.pgtask.internal.schedule.Scheduler} keeps one timer, for the earliest due time it
 * knows, and between fires costs nothing but a read when told that schedules changed (the
 * {@code schedules} control notification, sent by every declaration; and each time the listener
 * reconnects, since notifications sent while it was away are lost) or, as a backstop, once per
 * {@link dev.pgtask.internal.schedule.Scheduler#MAX_SLEEP}. Cron is parsed once, by the database
 * (pgtask.cron_parse), for SQL and Java declarations alike, and fire times are computed only by the
 * database (pgtask.cron_next), on its clock, in the schedule's time zone. Java never parses a cron
 * expression: {@link dev.pgtask.internal.schedule.Schedules} turns the database's refusal (SQLSTATE
 * 23514, constraint {@code schedule_cron}) into {@code InvalidScheduleException} with its message.
 */
package dev.pgtask.internal.schedule;
