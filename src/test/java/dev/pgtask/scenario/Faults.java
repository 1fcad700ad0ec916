package dev.pgtask.scenario;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.Leaks;
import dev.pgtask.testsupport.TestDatabase;
import dev.pgtask.testsupport.WorkerProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Shared pieces of the fault-injection suite (the {@code *IT} classes of this package): worker
 * settings short enough for tests, the invariants checked after every fault, and recovery timing.
 *
 * <p>Invariants (docs/failure-modes.md): every task in a final state; one committed execution row
 * per completed {@code demo.record} task, from its last attempt (rolled-back attempts left none);
 * no two executions of one tenant overlap; no advisory lock left once the workers are gone.
 */
final class Faults {

  /** Claim lease of the test workers (the library default is 30 s). */
  static final Duration LEASE = Duration.ofSeconds(3);
  /** Rescue interval of the test workers (the library default is 10 s). */
  static final Duration RESCUE = Duration.ofSeconds(1);
  /**
   * Slack on top of a documented bound, for a 2-core CI machine shared with other builds: pass
   * duration, scheduling delays of a busy JVM, the test's own polling.
   */
  static final Duration SLACK = Duration.ofSeconds(5);

  /** {@code -Dpgtask.long=true} runs the long variants. */
  static final boolean LONG = Boolean.getBoolean("pgtask.long");

  private Faults() {}

  /**
   * CLI arguments of a test worker with the short fault settings; {@code extra} adds options or
   * overrides these (picocli takes each option once).
   */
  static String[] args(String workerId, String... extra) {
    java.util.Map<String, String> options = new java.util.LinkedHashMap<>();
    options.put("--worker-id", workerId);
    options.put("--concurrency", "4");
    options.put("--poll-interval", "1s");
    options.put("--lease-duration", LEASE.toMillis() + "ms");
    options.put("--rescue-interval", RESCUE.toMillis() + "ms");
    options.put("--shutdown-timeout", "5s");
    for (int i = 0; i + 1 < extra.length; i += 2) {
      options.put(extra[i], extra[i + 1]);
    }
    List<String> a = new ArrayList<>();
    options.forEach((k, v) -> {
      a.add(k);
      a.add(v);
    });
    return a.toArray(String[]::new);
  }

  /** Waits until the worker's LISTEN session is connected (it is then claiming). */
  static void awaitUp(Db sql, String workerId) {
    await("worker " + workerId + " up").atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(100))
        .ignoreExceptions()
        .until(() -> listenerPid(sql, workerId) != null);
  }

  static String listenerPid(Db sql, String workerId) throws Exception {
    return sql.text("SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
        + "AND application_name = 'pgtask listen " + workerId + "'");
  }

  /** Tasks executing right now on {@code workerId} (their transaction is open: backend known). */
  static long executingOn(Db sql, String workerId) throws Exception {
    return sql.count("SELECT count(*) FROM pgtask.running WHERE worker = '" + workerId + "' AND backend_pid IS NOT NULL");
  }

  /** Enqueues {@code n} demo.record tasks sleeping {@code ms}; every 10th has no tenant. */
  static void enqueueRecords(Db sql, int n, int tenants, int ms) throws Exception {
    sql.exec("SELECT pgtask.enqueue('demo.record', jsonb_build_object('ms', " + ms + "), "
        + "tenant => CASE WHEN i % 10 = 0 THEN NULL ELSE 'tenant-' || (i % " + tenants + ") END) "
        + "FROM generate_series(1, " + n + ") i");
  }

  /** The database clock, in epoch seconds (all timings are measured on it). */
  static double dbNow(Db sql) throws Exception {
    return Double.parseDouble(sql.text("SELECT extract(epoch FROM clock_timestamp())"));
  }

  /** Tasks left running by {@code workerId} (after it died: its orphans). */
  static List<String> runningOwnedBy(Db sql, String workerId) throws Exception {
    return sql.rows("SELECT id FROM pgtask.task WHERE state = 'running' AND owner = '" + workerId + "' ORDER BY id");
  }

  /**
   * Waits until no task is running under {@code workerId} any more and returns the seconds from
   * {@code deathEpoch} to the last "worker lost" entry written for it (death → claimable again).
   */
  static double awaitRescued(Db sql, String workerId, double deathEpoch, Duration atMost) throws Exception {
    await("tasks of " + workerId + " rescued").atMost(atMost).pollInterval(Duration.ofMillis(100)).ignoreExceptions()
        .until(() -> runningOwnedBy(sql, workerId).isEmpty());
    String last = sql.text("SELECT extract(epoch FROM max((e ->> 'at')::timestamptz)) FROM pgtask.task t, "
        + "jsonb_array_elements(t.errors) e WHERE e ->> 'worker' = '" + workerId + "' AND e ->> 'error' LIKE 'worker lost%'");
    return last == null ? 0 : Double.parseDouble(last) - deathEpoch;
  }

  /** Number of "worker lost" entries in the error history of task {@code id}. */
  static long workerLostEntries(Db sql, long id) throws Exception {
    return sql.count("SELECT count(*) FROM pgtask.task t, jsonb_array_elements(t.errors) e "
        + "WHERE t.id = " + id + " AND e ->> 'error' LIKE 'worker lost%'");
  }

  /** Waits until no task is queued or running. */
  static void awaitAllFinal(Db sql, Duration atMost) {
    await("every task final").atMost(atMost).pollInterval(Duration.ofMillis(250)).ignoreExceptions()
        .until(() -> sql.count("SELECT count(*) FROM pgtask.task WHERE state IN ('available', 'retryable', 'running')") == 0);
  }

  /**
   * Every demo.record task completed, each with exactly one committed execution row, from its last
   * attempt: no row from a rolled-back attempt (crashed, killed, frozen or fenced out).
   */
  static void assertEveryRecordTaskCompletedExactlyOnce(Db sql) throws Exception {
    assertThat(sql.rows("SELECT id || ' ' || state FROM pgtask.task WHERE kind = 'demo.record' AND state <> 'completed'"))
        .as("demo.record tasks not completed").isEmpty();
    assertThat(sql.rows("SELECT task_id || ' x' || count(*) FROM pgtask_demo.execution GROUP BY task_id HAVING count(*) <> 1"))
        .as("tasks whose effects were committed more than once").isEmpty();
    assertThat(sql.rows("SELECT t.id FROM pgtask.task t LEFT JOIN pgtask_demo.execution e ON e.task_id = t.id "
        + "WHERE t.kind = 'demo.record' AND e.task_id IS NULL"))
        .as("completed tasks without their committed effect").isEmpty();
    assertThat(sql.rows("SELECT e.task_id || ' row attempt ' || e.attempt || ', task attempt ' || t.attempt "
        + "FROM pgtask_demo.execution e JOIN pgtask.task t ON t.id = e.task_id WHERE e.attempt <> t.attempt"))
        .as("effects committed by an attempt other than the completing one (a zombie's or a rolled-back one)").isEmpty();
  }

  /** No two committed executions of one tenant overlap in time. */
  static void assertNoTenantOverlap(Db sql) throws Exception {
    assertThat(sql.rows("SELECT a.task_id || ' & ' || b.task_id || ' (' || a.tenant || ')' "
        + "FROM pgtask_demo.execution a JOIN pgtask_demo.execution b "
        + "ON a.tenant = b.tenant AND a.task_id < b.task_id "
        + "AND tstzrange(a.started_at, a.finished_at) && tstzrange(b.started_at, b.finished_at)"))
        .as("overlapping executions of one tenant").isEmpty();
  }

  /** SIGTERM to every live worker (graceful, exit 0), then no advisory lock may be left. */
  static void stopAllAndAssertNoLocks(TestDatabase db, List<WorkerProcess> workers) throws Exception {
    for (WorkerProcess w : workers) {
      if (w.isAlive()) {
        assertThat(w.terminate(Duration.ofSeconds(30))).as("exit code after SIGTERM of " + w.pid()).isZero();
      }
    }
    Leaks.assertNoAdvisoryLocks(db);
  }

  static void closeAll(List<WorkerProcess> workers) throws InterruptedException {
    for (WorkerProcess w : workers) {
      w.close();
    }
  }

  static String seconds(double s) {
    return String.format("%.2f s", s);
  }
}
