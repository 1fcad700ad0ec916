package dev.pgtask.cli;

import dev.pgtask.internal.sql.OpsQueries;
import dev.pgtask.internal.sql.OpsQueries.Progress;
import java.io.PrintWriter;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.jooq.DSLContext;

/**
 * The demo's checks and report: from the execution records and the task table, whether every task
 * ran exactly once, no two tasks of one tenant overlapped, and how the killed worker's tasks were
 * rescued; printed, with the exit code the checks give.
 */
final class DemoReport {

  private DemoReport() {}

  /** One committed execution of a demo.record task. */
  record Execution(long taskId, int attempt, String tenant, String worker, Instant startedAt, Instant finishedAt) {}

  static int report(DSLContext dsl, PrintWriter out, int tasks, Progress progress, DemoWorker killed, Instant killedAt,
      long wallNanos, String failure) {
    List<Execution> executions = dsl
        .select(DemoHandlers.TASK_ID, DemoHandlers.ATTEMPT, DemoHandlers.TENANT, DemoHandlers.WORKER,
            DemoHandlers.STARTED_AT, DemoHandlers.FINISHED_AT)
        .from(DemoHandlers.EXECUTION)
        .fetch(r -> new Execution(r.value1(), r.value2(), r.value3(), r.value4(),
            r.value5() == null ? null : r.value5().toInstant(), r.value6() == null ? null : r.value6().toInstant()));
    Set<Long> taskIds = new HashSet<>(OpsQueries.selectTaskIds(dsl, DemoCommand.QUEUE));

    Map<Long, Integer> perTask = new HashMap<>();
    for (Execution e : executions) {
      perTask.merge(e.taskId, 1, Integer::sum);
    }
    long duplicated = perTask.values().stream().filter(n -> n > 1).count();
    long missing = taskIds.stream().filter(id -> !perTask.containsKey(id)).count();
    long strangers = perTask.keySet().stream().filter(id -> !taskIds.contains(id)).count();
    boolean exactlyOnce = duplicated == 0 && missing == 0 && strangers == 0 && executions.size() == taskIds.size();

    Map<String, List<Execution>> byTenant = new LinkedHashMap<>();
    for (Execution e : executions) {
      byTenant.computeIfAbsent(String.valueOf(e.tenant), t -> new ArrayList<>()).add(e);
    }
    long overlaps = 0;
    Map<String, Long> overlapsByTenant = new LinkedHashMap<>();
    for (Map.Entry<String, List<Execution>> t : byTenant.entrySet()) {
      long n = overlappingPairs(t.getValue());
      if (n > 0) {
        overlapsByTenant.put(t.getKey(), n);
      }
      overlaps += n;
    }

    int rescued = 0;
    Duration longestRescue = null;
    Duration lastRescuePass = null;
    if (killed != null) {
      Map<Long, Instant> rescuedTasks = OpsQueries.selectRescuedFrom(dsl, DemoCommand.QUEUE, killed.id);
      rescued = rescuedTasks.size();
      Instant lastRestart = executions.stream().filter(e -> rescuedTasks.containsKey(e.taskId))
          .map(e -> e.startedAt).filter(s -> s != null).max(Comparator.naturalOrder()).orElse(null);
      if (lastRestart != null) {
        longestRescue = Duration.between(killedAt, lastRestart);
      }
      Instant lastRescue = rescuedTasks.values().stream().filter(s -> s != null).max(Comparator.naturalOrder()).orElse(null);
      if (lastRescue != null) {
        lastRescuePass = Duration.between(killedAt, lastRescue);
      }
    }

    boolean allCompleted = progress.completed() == tasks && progress.total() == tasks;
    boolean ok = failure == null && allCompleted && exactlyOnce && overlaps == 0;
    double seconds = wallNanos / 1e9;
    out.println();
    out.println("pgtask demo report");
    out.printf("  tasks completed:        %d of %d%s%n", progress.completed(), tasks, allCompleted ? "" : "  <-- FAILED");
    out.printf("  executed exactly once:  %s (%d executions of %d tasks; %d duplicated, %d missing)%s%n",
        exactlyOnce ? "yes" : "no", executions.size(), taskIds.size(), duplicated, missing + strangers,
        exactlyOnce ? "" : "  <-- FAILED");
    out.printf("  tenant overlaps:        %d (overlapping execution pairs within one tenant, over %d tenants)%s%n",
        overlaps, byTenant.size(), overlaps == 0 ? "" : "  <-- FAILED " + overlapsByTenant);
    if (killed == null) {
      out.println("  worker killed:          none (the run ended before a worker could be killed while holding tasks)");
    } else {
      out.printf("  worker killed:          %s (SIGKILL), %d of its tasks rescued%n", killed.id, rescued);
      out.printf("  longest rescue time:    %s (kill -> its last rescued task running again; taken back by the"
              + " rescue pass after %s)%n",
          longestRescue == null ? "n/a" : Formats.duration(longestRescue),
          lastRescuePass == null ? "n/a" : Formats.duration(lastRescuePass));
    }
    out.printf(Locale.ROOT, "  throughput:             %.0f tasks/s%n", progress.completed() / seconds);
    out.printf("  wall time:              %s (enqueue to last completion)%n", Formats.duration(Duration.ofNanos(wallNanos)));
    out.printf("  result:                 %s%n", ok ? "OK, every invariant held"
        : "FAILED" + (failure != null ? ": " + failure : ""));
    out.flush();
    return ok ? ExitCodes.OK : ExitCodes.FAILURE;
  }

  /** Pairs of executions of one tenant whose [started_at, finished_at] intervals intersect. */
  static long overlappingPairs(List<Execution> executions) {
    List<Execution> sorted = new ArrayList<>(executions);
    sorted.sort(Comparator.comparing((Execution e) -> e.startedAt, Comparator.nullsFirst(Comparator.naturalOrder())));
    long pairs = 0;
    for (int i = 0; i < sorted.size(); i++) {
      Instant end = sorted.get(i).finishedAt;
      for (int j = i + 1; j < sorted.size(); j++) {
        Instant start = sorted.get(j).startedAt;
        if (end != null && start != null && !start.isBefore(end)) {
          break;
        }
        pairs++;
      }
    }
    return pairs;
  }
}
