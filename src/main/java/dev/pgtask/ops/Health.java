package dev.pgtask.ops;

import java.time.Duration;
import java.time.Instant;

/**
 * What threatens the task table and what no live worker can run: the one row of
 * {@code pgtask.health}.
 *
 * @param oldestXactPid the backend pid of this database's oldest open transaction (it holds back
 *     vacuum of every table here), or null when none is open; a transaction of another database of
 *     the same server is never shown
 * @param oldestXactApplication that backend's application_name, or null
 * @param oldestXactAge how long that transaction has been open, or null
 * @param taskLiveTuples live rows of the task table, as the statistics last counted them (null when
 *     the statistics have no row for it)
 * @param taskDeadTuples dead rows of the task table not yet vacuumed (null as above)
 * @param taskLastAutovacuum when autovacuum last vacuumed the task table, or null (never)
 * @param taskLastVacuum when the task table was last vacuumed by hand, or null (never)
 * @param taskTableBytes the task table's size on disk, indexes and TOAST included
 * @param notificationQueueUsage {@code pg_notification_queue_usage()}, 0..1: at 1 every
 *     committing enqueue fails
 * @param unservedTasks due tasks in queues that no live worker serves
 * @param unhandledTasks due tasks of kinds that no live worker of their queue handles
 * @param tenantsStuck tenants whose tasks wait behind such an unrunnable head
 * @param pausedTasks due tasks of paused queues (held back on purpose, so not counted above)
 * @param limitsOver limits ({@code pgtask.limits}) whose slots held exceed their max_running: a bug,
 *     or an application taking advisory locks in pgtask's reserved classids (lock_namespace ..
 *     lock_namespace + 2047); 0 when all is well
 * @param limitsStuck limits with running tasks whose lease ran out: a dead worker's tasks, which the
 *     claim counts as running (taking the limit's room) until the rescue pass takes them back
 */
public record Health(Integer oldestXactPid, String oldestXactApplication, Duration oldestXactAge,
    Long taskLiveTuples, Long taskDeadTuples, Instant taskLastAutovacuum, Instant taskLastVacuum,
    long taskTableBytes, double notificationQueueUsage, long unservedTasks, long unhandledTasks,
    long tenantsStuck, long pausedTasks, long limitsOver, long limitsStuck) {}
