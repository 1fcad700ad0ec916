package dev.pgtask.spring;

import dev.pgtask.PgTaskWorker;
import dev.pgtask.ops.Health;
import dev.pgtask.ops.PgTaskOperations;
import dev.pgtask.ops.QueueSummary;
import dev.pgtask.ops.Unrunnable;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;

/**
 * What the actuator health indicator {@code pgtask} ({@code /actuator/health/pgtask}) reports, free
 * of Spring Boot's health types: {@link PgTaskHealthIndicator} (Boot 3.5) and
 * {@link PgTaskBoot4HealthIndicator} (Boot 4, whose health types live in another package) only hand
 * the result to their line's {@code Health.Builder}. A query that fails throws; the indicators
 * turn that into DOWN.
 *
 * <p>DOWN when the database cannot be queried, or when this application's worker has made no
 * successful claim for {@code pgtask.health.claim-stall} (default three poll intervals plus 30 s):
 * a worker claims at least once per poll interval, so its claim loop is stuck. Otherwise UP, with
 * warnings for what needs a person: the LISTEN connection is down (the worker falls back to
 * polling), due tasks that no live worker serves or handles ({@code pgtask.unrunnable}), the oldest
 * due task's lag above {@code pgtask.health.lag-warning}, and the notification queue's fill level
 * above {@code pgtask.health.notification-queue-warning} (a full queue fails every committing
 * enqueue). Details:
 * <ul>
 *   <li>{@code worker}: id, listening, lastClaimAt, lastClaimAgeSeconds (absent when this
 *       application runs no worker);</li>
 *   <li>{@code oldestDueLagSeconds}: how long the oldest due task of the worker's queues (of all
 *       queues, without a worker) has waited, from {@code pgtask.queue_summary};</li>
 *   <li>{@code unservedTasks}, {@code unhandledTasks}, {@code tenantsStuck} and {@code unrunnable}
 *       (queue, kind, reason, tasks) from {@code pgtask.health} and {@code pgtask.unrunnable};</li>
 *   <li>{@code limitsOver} and {@code limitsStuck} from {@code pgtask.health}: limits holding more
 *       slots than their max_running (never pgtask's doing: an application's advisory locks in
 *       pgtask's reserved range), and limits counting a dead worker's tasks until the rescue pass
 *       (both warned about);</li>
 *   <li>{@code notificationQueueUsage}: {@code pg_notification_queue_usage()}, 0..1;</li>
 *   <li>{@code warnings}: the list above, in words.</li>
 * </ul>
 * The indicator runs three bounded read-only transactions on the application's pool, through
 * {@link PgTaskOperations} (the reads the command line and applications use); it takes no lock. Use it
 * for readiness and alerting, not for liveness: restarting the application cures none of the
 * conditions it reports.
 */
final class PgTaskHealthCheck {

  /** UP or DOWN, and the details in the order they are reported. */
  record Result(boolean up, Map<String, Object> details) {}

  private final PgTaskOperations operations;
  private final PgTaskWorkerLifecycle worker;
  private final PgTaskProperties properties;

  PgTaskHealthCheck(DataSource dataSource, PgTaskWorkerLifecycle worker, PgTaskProperties properties) {
    this.operations = PgTaskOperations.create(dataSource);
    this.worker = worker;
    this.properties = properties;
  }

  Result check() {
    Map<String, Object> details = new LinkedHashMap<>();
    Health h = operations.health();
    List<QueueSummary> queues = operations.queueSummary();
    List<Unrunnable> unrunnable = operations.unrunnable();
    List<String> warnings = new ArrayList<>();
    boolean down = false;

    PgTaskWorker w = worker == null ? null : worker.worker();
    List<String> servedQueues = w == null ? null : properties.getWorker().getQueues();
    if (w != null) {
      Map<String, Object> wd = new LinkedHashMap<>();
      wd.put("id", w.workerId());
      wd.put("listening", w.listening());
      Instant last = w.lastClaimAt();
      wd.put("lastClaimAt", last == null ? null : last.toString());
      Duration age = last == null ? null : Duration.between(last, Instant.now());
      wd.put("lastClaimAgeSeconds", age == null ? null : age.toMillis() / 1000.0);
      wd.put("kinds", worker.kinds());
      details.put("worker", wd);
      Duration stall = properties.getHealth().getClaimStall() != null ? properties.getHealth().getClaimStall()
          : properties.getWorker().getPollInterval().multipliedBy(3).plusSeconds(30);
      if (age != null && age.compareTo(stall) > 0) {
        down = true;
        warnings.add("no successful claim for " + age.toSeconds() + " s (pgtask.health.claim-stall " + stall + ")");
      }
      if (!w.listening()) {
        warnings.add("the LISTEN connection is down: the worker polls every " + properties.getWorker().getPollInterval());
      }
    }

    Duration lag = Duration.ZERO;
    for (QueueSummary q : queues) {
      if (servedQueues == null || servedQueues.contains(q.queue())) {
        Duration l = q.lag() == null ? Duration.ZERO : q.lag();
        if (l.compareTo(lag) > 0) {
          lag = l;
        }
      }
    }
    details.put("oldestDueLagSeconds", lag.toMillis() / 1000.0);
    if (lag.compareTo(properties.getHealth().getLagWarning()) > 0) {
      warnings.add("the oldest due task has waited " + lag.toSeconds() + " s");
    }

    long unserved = h.unservedTasks();
    long unhandled = h.unhandledTasks();
    details.put("unservedTasks", unserved);
    details.put("unhandledTasks", unhandled);
    details.put("tenantsStuck", h.tenantsStuck());
    List<Map<String, Object>> u = new ArrayList<>();
    for (Unrunnable r : unrunnable) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("queue", r.queue());
      m.put("kind", r.kind());
      m.put("reason", r.reason());
      m.put("tasks", r.tasks());
      u.add(m);
    }
    details.put("unrunnable", u);
    if (unserved > 0) {
      warnings.add(unserved + " due task(s) in queues that no live worker serves");
    }
    if (unhandled > 0) {
      warnings.add(unhandled + " due task(s) of kinds that no live worker of their queue handles");
    }

    details.put("limitsOver", h.limitsOver());
    details.put("limitsStuck", h.limitsStuck());
    if (h.limitsOver() > 0) {
      warnings.add(h.limitsOver() + " limit(s) hold more slots than their max_running: some session takes advisory"
          + " locks in pgtask's reserved range (see pgtask.limits and pg_locks)");
    }
    if (h.limitsStuck() > 0) {
      warnings.add(h.limitsStuck() + " limit(s) count running tasks whose lease ran out (a dead worker's) until the"
          + " rescue pass takes them back");
    }

    double usage = h.notificationQueueUsage();
    details.put("notificationQueueUsage", usage);
    if (usage > properties.getHealth().getNotificationQueueWarning()) {
      warnings.add("the notification queue is " + Math.round(usage * 100) + "% full: a session that LISTENs"
          + " idles in an open transaction; at 100% every enqueue's commit fails");
    }
    details.put("warnings", warnings);
    return new Result(!down, details);
  }
}
