package dev.pgtask.cli.bench;

import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.dashboard.Dashboard;
import dev.pgtask.dashboard.DashboardAccess;
import dev.pgtask.dashboard.DashboardRequest;
import dev.pgtask.dashboard.DashboardResponse;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The dashboard on a big table (issue 29: every page within 500 ms with 1,000,000 tasks): a task
 * table of {@code rows} tasks as a service that kept a week of history has it (93 % completed over
 * 7 days, 3 % discarded and 1 % retryable with errors of 20 kinds, 3 % queued; 20 kinds in 10
 * queues), each failed task with its attempt history and a stack trace; then each page is answered through
 * {@link Dashboard#handle} (the same core the HTTP servers call, without the network) several
 * times, and the slowest answer of each is reported. The bulk page is its dry run (a read-write
 * dashboard): the one page that counts what a filter matches.
 */
final class DashboardPages {

  static final int TIMES = 5;

  private DashboardPages() {}

  /** The slowest of {@value #TIMES} answers of each page, in ms, by page; the table filled first. */
  static Map<String, Double> measure(HikariDataSource pool, int rows) throws Exception {
    fill(pool, rows);
    long taskId;
    try (Connection c = pool.getConnection(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT max(id) FROM pgtask.task WHERE state = 'discarded'")) {
      rs.next();
      taskId = rs.getLong(1);
    }
    Dashboard dashboard = Dashboard.builder(pool).access(DashboardAccess.READ_WRITE).build();
    Map<String, String> pages = new LinkedHashMap<>();
    pages.put("overview", "/");
    pages.put("tasks", "/tasks");
    pages.put("tasks_discarded", "/tasks?state=discarded");
    pages.put("tasks_kind_queue", "/tasks?kind=bench.kind7&queue=q3");
    pages.put("tasks_error", "/tasks?error=timeout+17");
    pages.put("task", "/tasks/" + taskId);
    pages.put("running", "/running");
    pages.put("errors", "/errors");
    pages.put("tenants", "/tenants");
    pages.put("schedules", "/schedules");
    pages.put("workers", "/workers");
    pages.put("limits", "/limits");
    pages.put("bulk_dry_run", "/bulk?action=retry&state=discarded&kind=bench.kind7");
    Map<String, Double> slowest = new LinkedHashMap<>();
    for (Map.Entry<String, String> page : pages.entrySet()) {
      double worst = 0;
      for (int i = 0; i < TIMES + 1; i++) {
        long start = System.nanoTime();
        DashboardResponse r = dashboard.handle(request(page.getValue()));
        double ms = (System.nanoTime() - start) / 1e6;
        if (r.status() != 200) {
          throw new IllegalStateException("dashboard page " + page.getValue() + " answered " + r.status() + ": "
              + r.text().substring(0, Math.min(400, r.text().length())));
        }
        if (i > 0) { // the first answer of each page warms its statements up
          worst = Math.max(worst, ms);
        }
      }
      slowest.put(page.getKey(), worst);
    }
    return slowest;
  }

  private static DashboardRequest request(String pathAndQuery) {
    int q = pathAndQuery.indexOf('?');
    String path = q < 0 ? pathAndQuery : pathAndQuery.substring(0, q);
    Map<String, String> query = new LinkedHashMap<>();
    if (q >= 0) {
      for (String pair : pathAndQuery.substring(q + 1).split("&")) {
        String[] kv = pair.split("=", 2);
        query.put(kv[0], java.net.URLDecoder.decode(kv[1], java.nio.charset.StandardCharsets.UTF_8));
      }
    }
    return new DashboardRequest("GET", "", path, query, Map.of(), Map.of(), null);
  }

  /** Empties the task table and fills it with {@code rows} tasks (see the class comment). */
  static void fill(HikariDataSource pool, int rows) throws Exception {
    BenchDatabase.resetTasks(pool);
    List<String> statements = new ArrayList<>();
    // finished: completed, discarded (errors), over the last 7 days; queued: available, retryable
    statements.add(String.format(Locale.ROOT, "INSERT INTO pgtask.task (kind, queue, payload, state, attempt, max_attempts,"
        + " run_at, created_at, attempted_at, finished_at, errors) "
        + "SELECT 'bench.kind' || (i %% 20), 'q' || (i %% 10), jsonb_build_object('order', i, 'note', repeat('x', 40)),"
        + " s.state, CASE WHEN s.state = 'available' THEN 0 ELSE 1 + (i %% 3) END, 3,"
        + " s.at, s.at, CASE WHEN s.state <> 'available' THEN s.at END,"
        + " CASE WHEN s.state IN ('completed', 'discarded') THEN s.at + interval '20 ms' END,"
        + " CASE WHEN s.state IN ('discarded', 'retryable') THEN jsonb_build_array(jsonb_build_object('attempt', 1,"
        + "   'at', s.at, 'worker', 'bench', 'error', 'java.io.IOException: timeout ' || (i %% 20) || ' talking to upstream'))"
        + " END "
        + "FROM generate_series(1, %d) i "
        + "CROSS JOIN LATERAL (SELECT CASE WHEN i %% 100 < 93 THEN 'completed' WHEN i %% 100 < 96 THEN 'discarded'"
        + "   WHEN i %% 100 < 97 THEN 'retryable' ELSE 'available' END::pgtask.task_state AS state,"
        + "   now() - (interval '7 days') * ((%d - i)::float8 / %d) AS at) s", rows, rows, rows));
    // the attempts of the failed tasks, with a stack trace each
    statements.add("INSERT INTO pgtask.task_attempt (task_id, attempt, worker, started_at, finished_at, outcome, error,"
        + " error_detail) SELECT t.id, 1, 'bench', t.attempted_at, t.attempted_at + interval '20 ms', 'failed',"
        + " t.errors -> 0 ->> 'error', 'java.io.IOException: timeout' || repeat(E'\\n\\tat dev.example.Client.call(Client.java:42)', 30)"
        + " FROM pgtask.task t WHERE t.state IN ('discarded', 'retryable')");
    try (Connection c = pool.getConnection(); Statement st = c.createStatement()) {
      for (String sql : statements) {
        st.execute(sql);
      }
    }
    BenchDatabase.vacuumAnalyze(pool);
    try (Connection c = pool.getConnection(); Statement st = c.createStatement()) {
      st.execute("VACUUM ANALYZE pgtask.task_attempt");
    }
  }
}
