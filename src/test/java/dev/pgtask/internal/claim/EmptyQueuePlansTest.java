package dev.pgtask.internal.claim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pgtask.NewTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskOptions;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.testsupport.QueueDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import dev.pgtask.internal.sql.ClaimQueries;
import dev.pgtask.internal.sql.IdleQueries;
import dev.pgtask.internal.sql.Sql;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A queue is often empty when the server plans its statements: an idle queue polled, autovacuum's
 * last ANALYZE seeing no row. A plan the server keeps from then must not read the whole task
 * table for each row once a backlog arrives. Each test counts the rows of pgtask.task read by
 * sequential scans ({@code seq_tup_read}) while a backlog goes through plans made on an empty,
 * analyzed table. The other end of the same settings: a claim over a large backlog is not compiled
 * by JIT on every execution.
 */
class EmptyQueuePlansTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("emptyplans", 3);

  @BeforeEach
  void emptyAndAnalyzed() throws Exception {
    queue.sql().exec("DELETE FROM pgtask.task");
    queue.sql().exec("VACUUM ANALYZE pgtask.task");
  }

  @Test
  void aBatchIntoAnEmptyAnalyzedTableReadsNoTaskSequentially() throws Exception {
    try (Connection c = queue.pool().getConnection(); Statement st = c.createStatement()) {
      c.setAutoCommit(false);
      // counted from here: a pooled session may carry its earlier transactions' reads, unreported
      long before = sequentiallyReadUnreported(st);
      // 3,000 tasks of 300 tenants: each row's head is decided against the tasks before it
      st.execute("SELECT count(*) FROM pgtask.enqueue_batch(array_fill('empty.batch'::text, ARRAY[3000]), NULL, NULL,"
          + " (SELECT array_agg('t' || (i % 300)) FROM generate_series(1, 3000) i))");
      // one at a time, as pgtask.enqueue does it (the insert trigger decides each head)
      for (int i = 0; i < 300; i++) {
        st.execute("SELECT pgtask.enqueue('empty.single', tenant := 's" + (i % 30) + "')");
      }
      assertThat(sequentiallyReadUnreported(st) - before).as("task rows read by sequential scans in this transaction")
          .isZero();
      c.commit();
    }
  }

  @Test
  void aWorkerWhosePlansWereMadeOnAnEmptyTableDrainsABacklogWithoutReadingItWhole() throws Exception {
    assumeIdleSessionsReportTheirStatistics();
    int backlog = 2_000;
    try (PgTaskWorker worker = PgTaskWorker.builder(queue.pool()).concurrency(2)
        .handler("empty.task", (ctx, p) -> { })
        .build().start()) {
      // one task at a time into the idle worker: its claims run often enough on each pooled
      // connection to be kept as prepared statements, with their plans
      for (int i = 0; i < 20; i++) {
        long done = worker.stats().completed();
        queue.pgtask().enqueue(NewTask.of("empty.task", null, TaskOptions.defaults().withTenant("warm")));
        await().atMost(Duration.ofSeconds(30)).until(() -> worker.stats().completed() > done);
      }
      // the table empty and analyzed (which makes the server plan again), then claims on it
      queue.sql().exec("DELETE FROM pgtask.task");
      queue.sql().exec("VACUUM ANALYZE pgtask.task");
      for (int i = 0; i < 6; i++) {
        long claims = worker.stats().claimQueries();
        queue.sql().exec("SELECT pg_notify('pgtask', 'default')");
        await().atMost(Duration.ofSeconds(30)).until(() -> worker.stats().claimQueries() > claims);
      }
      long[] before = taskTableStats();

      List<NewTask> tasks = new ArrayList<>();
      for (int i = 0; i < backlog; i++) {
        tasks.add(NewTask.of("empty.task", null, TaskOptions.defaults().withTenant("t" + (i % 200))));
      }
      long done = worker.stats().completed();
      queue.pgtask().enqueueAll(tasks);
      await().atMost(Duration.ofSeconds(120)).until(() -> worker.stats().completed() >= done + backlog);
      // the statistics arrive from each session within about a second: wait until they hold at
      // least every claim's and every completion's update of the backlog
      await().atMost(Duration.ofSeconds(30)).until(() -> taskTableStats()[1] - before[1] >= 2L * backlog);
      // a plan that reads the table for each candidate row or each task reads it hundreds of
      // times here (measured without the settings: 379,199 and 548,696 rows, 190-270 times the
      // backlog). What is left is the re-lock of a task claimed into the idle worker, planned by
      // id on the empty table, which reads the table once each time the worker runs dry and claims
      // again (the next ANALYZE renews it: see the test below): 2,040 rows here, 12,121 in a CI run
      // under load
      long read = taskTableStats()[0] - before[0];
      assertThat(read).as("task rows read by sequential scans while %d tasks were claimed and completed", backlog)
          .isLessThan(25L * backlog);
    }
  }

  @Test
  void theLeaderAnalyzesATableThatOutgrewItsStatistics() throws Exception {
    assumeIdleSessionsReportTheirStatistics();
    // autovacuum would analyze the table too, on its own schedule: not here
    queue.sql().exec("ALTER TABLE pgtask.task SET (autovacuum_enabled = false)");
    try (PgTaskWorker worker = PgTaskWorker.builder(queue.pool()).concurrency(1).rescueInterval(Duration.ofMillis(500))
        .handler("empty.other", (ctx, p) -> { })
        .build().start()) {
      assertThat(plannedRows()).as("pg_class.reltuples of the empty, analyzed table").isZero();
      // a backlog of a kind nobody handles: it stays
      List<NewTask> tasks = new ArrayList<>();
      for (int i = 0; i < 3_000; i++) {
        tasks.add(NewTask.of("empty.unhandled", null));
      }
      queue.pgtask().enqueueAll(tasks);
      await().atMost(Duration.ofSeconds(30)).until(() -> plannedRows() >= 1_000);
    } finally {
      queue.sql().exec("ALTER TABLE pgtask.task RESET (autovacuum_enabled)");
    }
  }

  @Test
  void aClaimOverALargeBacklogIsNotCompiledByJit() throws Exception {
    Assumptions.assumeTrue("t".equals(queue.sql().text("SELECT pg_jit_available()")),
        "this server has no JIT compiler (PostgreSQL built without LLVM)");
    // 150,000 due tasks: the claim's plan costs more than jit_above_cost (100,000 by default),
    // and a server with JIT compiles it on every execution
    queue.sql().exec("INSERT INTO pgtask.task (kind, payload) SELECT 'empty.jit', '{}' FROM generate_series(1, 150000)");
    queue.sql().exec("VACUUM ANALYZE pgtask.task");
    List<Long> micros = new ArrayList<>();
    for (int i = 0; i < 15; i++) {
      long t0 = System.nanoTime();
      ClaimQueries.claimAvailable(queue.pool(), List.of("default"), List.of("empty.jit"), 10, "jit-test",
          Duration.ofSeconds(30), false);
      micros.add((System.nanoTime() - t0) / 1_000);
    }
    java.util.Collections.sort(micros);
    // measured here: a median of 32 ms a claim when the server compiles it, 1.4 ms when it does not.
    // The fastest of the 15: compiling is CPU work that every compiled claim pays, however idle the
    // machine, while a loaded machine (CI, two test JVMs) slows some plain claims past 10 ms
    assertThat(micros.get(0)).as("fastest claim over the backlog, µs (all: %s)", micros)
        .isLessThan(10_000L);
  }

  @Test
  void anIdleWorkersPollAndItsOwedSpillOverALargeBacklogAreNotCompiledByJit() throws Exception {
    Assumptions.assumeTrue("t".equals(queue.sql().text("SELECT pg_jit_available()")),
        "this server has no JIT compiler (PostgreSQL built without LLVM)");
    // as above: 150,000 due tasks lift the estimated cost of the poll's and the spill's read of the
    // claimable index past jit_above_cost (issue 31: 300-600 ms each beside a long history)
    queue.sql().exec("INSERT INTO pgtask.task (kind, payload) SELECT 'empty.jit', '{}' FROM generate_series(1, 150000)");
    queue.sql().exec("VACUUM ANALYZE pgtask.task");
    List<Long> polls = new ArrayList<>();
    List<Long> spills = new ArrayList<>();
    for (int i = 0; i < 15; i++) {
      long t0 = System.nanoTime();
      try (Connection c = queue.pool().getConnection()) {
        c.setAutoCommit(false);
        assertThat(IdleQueries.claimable(Sql.using(c), List.of("default"), List.of("empty.jit"))).isTrue();
        c.commit();
        c.setAutoCommit(true);
      }
      polls.add((System.nanoTime() - t0) / 1_000);
      t0 = System.nanoTime();
      assertThat(IdleQueries.notifyIfClaimable(queue.pool(), List.of("default"), List.of("empty.jit"))).isEqualTo(1);
      spills.add((System.nanoTime() - t0) / 1_000);
    }
    java.util.Collections.sort(polls);
    java.util.Collections.sort(spills);
    // the fastest of 15, as above: compiling is CPU work that every compiled statement pays
    assertThat(polls.get(0)).as("fastest idle poll over the backlog, µs (all: %s)", polls).isLessThan(10_000L);
    assertThat(spills.get(0)).as("fastest owed spill over the backlog, µs (all: %s)", spills).isLessThan(10_000L);
  }

  @Test
  void aClaimBesideALongHistoryReadsTheClaimableIndexInClaimOrderNotEveryClaimableTask() throws Exception {
    assumeIdleSessionsReportTheirStatistics();
    // what the planner sees (issue 31, scaled down): completed history in the claimed queue, a
    // backlog in another queue that waits behind one head per tenant; then 20,000 claimable tasks
    // the statistics do not know of. Multiplying the selectivities of the claim's conditions as if
    // they were independent, the planner expected about one row to pass them, read every claimable
    // task of the queue with a bitmap scan and sorted them (19,000 rows for a claim of 200 at
    // 1,000,000 rows, 13 ms; plain mode drained at 0.55 of its speed on an empty table)
    queue.sql().exec("INSERT INTO pgtask.task (kind, state, attempt, finished_at) "
        + "SELECT 'empty.history', 'completed', 1, now() FROM generate_series(1, 100000)");
    queue.sql().exec("INSERT INTO pgtask.task (kind, queue, tenant_id, blocked) "
        + "SELECT 'empty.backlog', 'elsewhere', pgtask.tenant_id('b' || (i % 200)), i > 200 FROM generate_series(1, 100000) i");
    queue.sql().exec("VACUUM ANALYZE pgtask.task");
    queue.sql().exec("INSERT INTO pgtask.task (kind, payload) SELECT 'empty.claimed', '{}' FROM generate_series(1, 20000)");
    try (HikariDataSource one = queue.database().pool(1)) {
      long before = claimableIndexEntriesRead(one);
      ClaimQueries.claimAvailable(one, List.of("default"), List.of("empty.claimed"), 200, "order-test", Duration.ofSeconds(30));
      long read = claimableIndexEntriesRead(one) - before;
      assertThat(read).as("entries of task_claimable_idx a claim of 200 read, beside 20,000 claimable tasks").isLessThan(2_000L);
    }
  }

  /**
   * The entries of task_claimable_idx read so far, by the cumulative statistics, once the one
   * session of {@code one} has reported its own (PostgreSQL 15: {@code pg_stat_force_next_flush},
   * then a statement, whose end reports).
   */
  private static long claimableIndexEntriesRead(HikariDataSource one) throws Exception {
    try (Connection c = one.getConnection(); Statement st = c.createStatement()) {
      st.execute("SELECT pg_stat_force_next_flush()");
      st.execute("SELECT 1");
    }
    try (Connection c = queue.database().dataSource().getConnection(); Statement st = c.createStatement()) {
      st.execute("SELECT pg_stat_clear_snapshot()");
      try (ResultSet rs = st.executeQuery("SELECT idx_tup_read FROM pg_stat_user_indexes "
          + "WHERE indexrelid = 'pgtask.task_claimable_idx'::regclass")) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  /**
   * Before PostgreSQL 15 a session sends its table statistics (rows inserted, updated, read) when
   * it next ends a transaction at least 500 ms after its last report: a pooled connection that goes
   * idle keeps its last counts unsent. These tests read other sessions' counts; on 13 and 14 they
   * would wait for counts that do not come (seen on 13 in CI).
   */
  private static void assumeIdleSessionsReportTheirStatistics() throws Exception {
    int version = Integer.parseInt(queue.sql().text("SHOW server_version_num"));
    Assumptions.assumeTrue(version >= 150000,
        "idle sessions report their table statistics from PostgreSQL 15 on; this server is " + version);
  }

  private static double plannedRows() throws Exception {
    try (Connection c = queue.database().dataSource().getConnection(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT reltuples FROM pg_class WHERE oid = 'pgtask.task'::regclass")) {
      rs.next();
      return rs.getDouble(1);
    }
  }

  /**
   * The rows of pgtask.task this session read by sequential scans and has not yet reported to the
   * cumulative statistics. {@code pg_stat_xact_user_tables} is named for the transaction, but it
   * shows a session's counts not yet reported, and a session reports at most once a second (an idle
   * one later still): on a pooled session they include what its earlier transactions read, such as
   * a worker's in the test before (1 to 449 rows in about one run in four, until this was found).
   * Nothing is reported inside a transaction, so the difference of two reads in one transaction is
   * what it read in between.
   */
  private static long sequentiallyReadUnreported(Statement st) throws Exception {
    try (ResultSet rs = st.executeQuery("SELECT coalesce(seq_tup_read, 0) FROM pg_stat_xact_user_tables "
        + "WHERE relid = 'pgtask.task'::regclass")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /** {seq_tup_read, n_tup_upd} of pgtask.task, from the cumulative statistics. */
  private static long[] taskTableStats() throws Exception {
    try (Connection c = queue.database().dataSource().getConnection(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT coalesce(seq_tup_read, 0), n_tup_upd FROM pg_stat_user_tables "
            + "WHERE relid = 'pgtask.task'::regclass")) {
      rs.next();
      return new long[] {rs.getLong(1), rs.getLong(2)};
    }
  }
}
