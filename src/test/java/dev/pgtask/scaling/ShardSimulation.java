package dev.pgtask.scaling;

import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.migrate.Migrations;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * A simulation behind docs/scaling.md, not part of the product or the suite: two PostgreSQL
 * servers stand for two shards of a distributed engine (Citus), each with an unchanged pgtask
 * schema and its own workers, and a router in this harness sends each task to a shard by a hash
 * of its tenant (as Citus does with the tenant as distribution column). It measures, on each
 * shard, exactly-once execution (one execution row per task, written in the task's transaction)
 * and tenant exclusion (no two executions of one tenant overlap in time), throughput with one
 * shard and with two, the same checks with tasks routed by task instead of by tenant (what breaks
 * when the tenant is not the distribution column), and what a claim that spans two shards costs
 * (two one-phase commits, or two-phase commit).
 *
 * <p>Run: {@code java -cp target/pgtask-cli.jar:target/test-classes dev.pgtask.scaling.ShardSimulation
 * URL1 URL2} with two JDBC URLs of databases the harness may fill (the second server needs
 * {@code max_prepared_transactions > 0} for the two-phase measurement).
 */
public final class ShardSimulation {

  private static final int TENANTS = 40;
  private static final int TASKS_PER_SHARD = 800;
  private static final int WORKERS_PER_SHARD = 2;
  private static final int CONCURRENCY = 8;
  private static final int TASK_MS = 10;

  private ShardSimulation() {}

  public static void main(String[] args) throws Exception {
    List<HikariDataSource> shards = new ArrayList<>();
    for (String url : args) {
      HikariDataSource ds = new HikariDataSource();
      ds.setJdbcUrl(url);
      ds.setMaximumPoolSize(4);
      Migrations.apply(ds);
      exec(ds, "CREATE TABLE IF NOT EXISTS public.sim_execution (task_id bigint NOT NULL, tenant text NOT NULL,"
          + " started_at timestamptz NOT NULL, finished_at timestamptz NOT NULL)");
      shards.add(ds);
    }
    System.out.println("shards: " + args.length + ", tenants " + TENANTS + ", task " + TASK_MS + " ms of sleep, "
        + WORKERS_PER_SHARD + " workers x concurrency " + CONCURRENCY + " per shard");

    // 1. one shard takes every tenant
    run("one shard, all tenants", shards.subList(0, 1), TASKS_PER_SHARD, Routing.BY_TENANT);
    // 2. two shards, tenants routed by hash: each shard gets about half the tenants and the tasks
    run("two shards, routed by tenant", shards, 2 * TASKS_PER_SHARD, Routing.BY_TENANT);
    // 3. two shards, routed by task: the same tenant on both shards
    run("two shards, routed by task (tenant not the distribution column)", shards, 2 * TASKS_PER_SHARD,
        Routing.BY_TASK);

    crossShardClaim(shards);
    shards.forEach(HikariDataSource::close);
  }

  enum Routing { BY_TENANT, BY_TASK }

  /**
   * The shard of task number {@code task}: by a hash of its tenant, or by the task (task {@code t}
   * has tenant {@code t % TENANTS}; {@code t / TENANTS} alternates between shards, so every tenant
   * has tasks on every shard).
   */
  static int shardOf(String tenant, int task, int shards, Routing routing) {
    return routing == Routing.BY_TENANT ? Math.floorMod(tenant.hashCode() * 0x9E3779B9, shards)
        : (task / TENANTS) % shards;
  }

  private static void run(String name, List<HikariDataSource> shards, int tasks, Routing routing) throws Exception {
    int n = shards.size();
    List<List<String>> byShard = new ArrayList<>();
    for (int s = 0; s < n; s++) {
      byShard.add(new ArrayList<>());
      exec(shards.get(s), "DELETE FROM pgtask.task; TRUNCATE public.sim_execution");
    }
    for (int t = 0; t < tasks; t++) {
      String tenant = "tenant-" + (t % TENANTS);
      byShard.get(shardOf(tenant, t, n, routing)).add(tenant);
    }
    List<PgTaskWorker> workers = new ArrayList<>();
    List<HikariDataSource> pools = new ArrayList<>();
    for (int s = 0; s < n; s++) {
      for (int w = 0; w < WORKERS_PER_SHARD; w++) {
        HikariDataSource pool = new HikariDataSource();
        pool.setJdbcUrl(shards.get(s).getJdbcUrl());
        pool.setMaximumPoolSize(CONCURRENCY + 2);
        pools.add(pool);
        workers.add(PgTaskWorker.builder(pool).workerId("shard" + s + "-w" + w).concurrency(CONCURRENCY)
            .pollInterval(java.time.Duration.ofMillis(500))
            .handler("sim.work", (ctx, p) -> {
              Connection c = ctx.connection();
              java.sql.Timestamp started;
              try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT clock_timestamp()")) {
                rs.next();
                started = rs.getTimestamp(1);
              }
              Thread.sleep(TASK_MS); // the task's simulated work
              try (PreparedStatement ps = c.prepareStatement(
                  "INSERT INTO public.sim_execution VALUES (?, ?, ?, clock_timestamp())")) {
                ps.setLong(1, ctx.taskId());
                ps.setString(2, ctx.tenant());
                ps.setTimestamp(3, started);
                ps.executeUpdate();
              }
            }).build());
      }
    }
    long t0 = System.nanoTime();
    for (int s = 0; s < n; s++) {
      try (Connection c = shards.get(s).getConnection(); PreparedStatement ps = c.prepareStatement(
          "SELECT count(pgtask.enqueue('sim.work', '{}'::jsonb, 'default', t)) FROM unnest(?::text[]) t")) {
        ps.setArray(1, c.createArrayOf("text", byShard.get(s).toArray()));
        ps.executeQuery().close();
      }
    }
    workers.forEach(PgTaskWorker::start);
    try {
      // sampled every 50 ms: the resolution of the time measured below
      org.awaitility.Awaitility.await("all tasks done").atMost(java.time.Duration.ofMinutes(10))
          .pollInterval(java.time.Duration.ofMillis(50)).until(() -> done(shards) >= tasks);
    } catch (org.awaitility.core.ConditionTimeoutException e) {
      // reported below as the tasks completed within the 10 minutes
    }
    double seconds = (System.nanoTime() - t0) / 1e9;
    int finished = done(shards);
    workers.forEach(PgTaskWorker::close);
    pools.forEach(HikariDataSource::close);
    System.out.printf(Locale.ROOT, "%n%s: %d of %d tasks completed in %.1f s = %.0f tasks/s%n", name, finished, tasks,
        seconds, finished / seconds);
    for (int s = 0; s < n; s++) {
      HikariDataSource ds = shards.get(s);
      long rows = count(ds, "SELECT count(*) FROM public.sim_execution");
      long distinct = count(ds, "SELECT count(DISTINCT task_id) FROM public.sim_execution");
      long overlaps = count(ds, "SELECT count(*) FROM public.sim_execution a JOIN public.sim_execution b"
          + " ON a.tenant = b.tenant AND a.task_id < b.task_id"
          + " AND a.started_at < b.finished_at AND b.started_at < a.finished_at");
      long tenants = count(ds, "SELECT count(DISTINCT tenant) FROM public.sim_execution");
      System.out.printf(Locale.ROOT, "  shard %d: %d tasks, %d tenants, %d execution rows for %d distinct tasks,"
          + " %d overlapping executions of one tenant on this shard%n", s, byShard.get(s).size(), tenants, rows,
          distinct, overlaps);
    }
    if (n > 1) {
      // the same tenant running at the same time on two shards: what one node's tenant lock cannot see
      List<long[]> a = intervals(shards.get(0));
      List<long[]> b = intervals(shards.get(1));
      long cross = 0;
      for (long[] x : a) {
        for (long[] y : b) {
          if (x[0] == y[0] && x[1] < y[2] && y[1] < x[2]) {
            cross++;
          }
        }
      }
      System.out.printf(Locale.ROOT, "  executions of one tenant overlapping across the two shards: %d%n", cross);
    }
  }

  /** (tenant number, start µs, end µs) of every execution on a shard; both servers share this machine's clock. */
  private static List<long[]> intervals(HikariDataSource ds) throws SQLException {
    List<long[]> out = new ArrayList<>();
    try (Connection c = ds.getConnection(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(
        "SELECT substr(tenant, 8)::bigint, (extract(epoch FROM started_at) * 1e6)::bigint,"
            + " (extract(epoch FROM finished_at) * 1e6)::bigint FROM public.sim_execution")) {
      while (rs.next()) {
        out.add(new long[] {rs.getLong(1), rs.getLong(2), rs.getLong(3)});
      }
    }
    return out;
  }

  private static int done(List<HikariDataSource> shards) throws SQLException {
    int sum = 0;
    for (HikariDataSource ds : shards) {
      sum += (int) count(ds, "SELECT count(*) FROM pgtask.task WHERE state = 'completed'");
    }
    return sum;
  }

  /**
   * A claim-shaped transaction (lock 10 claimable rows with SKIP LOCKED, mark them) on one shard,
   * then on two shards with two independent commits, then on two shards with two-phase commit (what
   * a distributed engine does to keep a multi-shard write atomic). Median and p90 of 300 each.
   */
  private static void crossShardClaim(List<HikariDataSource> shards) throws Exception {
    for (HikariDataSource ds : shards) {
      exec(ds, "DROP TABLE IF EXISTS public.sim_claim; CREATE TABLE public.sim_claim (id bigserial PRIMARY KEY,"
          + " state int NOT NULL DEFAULT 0); INSERT INTO public.sim_claim (state) SELECT 0 FROM generate_series(1, 10000)");
    }
    String claim = "WITH c AS (SELECT id FROM public.sim_claim WHERE state = 0 ORDER BY id LIMIT 10 FOR UPDATE SKIP LOCKED)"
        + " UPDATE public.sim_claim s SET state = 1 FROM c WHERE s.id = c.id";
    int rounds = 300;
    try (Connection a = shards.get(0).getConnection(); Connection b = shards.get(1).getConnection()) {
      a.setAutoCommit(false);
      b.setAutoCommit(false);
      double[] one = new double[rounds];
      double[] twoPlain = new double[rounds];
      double[] twoPc = new double[rounds];
      for (int i = 0; i < rounds; i++) {
        long t = System.nanoTime();
        try (Statement st = a.createStatement()) {
          st.executeUpdate(claim);
        }
        a.commit();
        one[i] = (System.nanoTime() - t) / 1e6;

        t = System.nanoTime();
        try (Statement sa = a.createStatement(); Statement sb = b.createStatement()) {
          sa.executeUpdate(claim);
          sb.executeUpdate(claim);
        }
        a.commit();
        b.commit();
        twoPlain[i] = (System.nanoTime() - t) / 1e6;

        t = System.nanoTime();
        String gid = "sim-" + i + "-" + System.nanoTime();
        try (Statement sa = a.createStatement(); Statement sb = b.createStatement()) {
          sa.executeUpdate(claim);
          sb.executeUpdate(claim);
          sa.execute("PREPARE TRANSACTION '" + gid + "'");
          sb.execute("PREPARE TRANSACTION '" + gid + "'");
        }
        a.setAutoCommit(true);
        b.setAutoCommit(true);
        try (Statement sa = a.createStatement(); Statement sb = b.createStatement()) {
          sa.execute("COMMIT PREPARED '" + gid + "'");
          sb.execute("COMMIT PREPARED '" + gid + "'");
        }
        a.setAutoCommit(false);
        b.setAutoCommit(false);
        twoPc[i] = (System.nanoTime() - t) / 1e6;
      }
      System.out.printf(Locale.ROOT, "%nclaim of 10 rows (median / p90 of %d, ms): one shard %.2f / %.2f;"
          + " two shards, two commits %.2f / %.2f; two shards, two-phase commit %.2f / %.2f%n", rounds,
          q(one, 0.5), q(one, 0.9), q(twoPlain, 0.5), q(twoPlain, 0.9), q(twoPc, 0.5), q(twoPc, 0.9));
    }
  }

  private static double q(double[] v, double q) {
    double[] s = v.clone();
    Arrays.sort(s);
    return s[(int) Math.min(s.length - 1, Math.round(q * (s.length - 1)))];
  }

  private static void exec(HikariDataSource ds, String sql) throws SQLException {
    try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
      st.execute(sql);
    }
  }

  private static long count(HikariDataSource ds, String sql) throws SQLException {
    try (Connection c = ds.getConnection(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
