package dev.pgtask.bench;

import dev.pgtask.NewTask;
import dev.pgtask.PgTask;
import dev.pgtask.TaskOptions;
import dev.pgtask.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Enqueue throughput on the test database server (a benchmark, not a test: it asserts nothing).
 *
 * <ul>
 *   <li>a Java batch of 10,000 tasks ({@code PgTask.enqueueAll}, one statement, one transaction),
 *       median of 5 runs;</li>
 *   <li>single {@code SELECT pgtask.enqueue(...)} calls, autocommit, one connection;</li>
 *   <li>the same pattern with a bare {@code INSERT} into a scratch table plus {@code pg_notify} in
 *       one autocommit statement: the floor a single enqueue cannot beat (one commit each);</li>
 *   <li>single {@code PgTask.enqueue} calls through the pool, autocommit.</li>
 * </ul>
 *
 * Run it with:
 * <pre>
 * mvn -q test-compile dependency:build-classpath -Dmdep.outputFile=target/test-classpath.txt -Dmdep.includeScope=test
 * java -cp target/test-classes:target/classes:$(cat target/test-classpath.txt) dev.pgtask.bench.EnqueueBench
 * </pre>
 * The server is found like the tests find it (PGTASK_TEST_URL, else the libpq defaults).
 */
public final class EnqueueBench {

  private static final int BATCH = 10_000;
  private static final int RUNS = 5;
  private static final int SINGLES = 2_000;

  private EnqueueBench() {}

  public static void main(String[] args) throws Exception {
    try (TestDatabase db = TestDatabase.create("bench")) {
      PgTask pgtask = PgTask.create(db.dataSource());

      // Java batch of 10,000
      pgtask.enqueueAll(batch("warmup")); // warm up the JVM, the pool and the plan cache
      double[] batchRates = new double[RUNS];
      for (int r = 0; r < RUNS; r++) {
        List<NewTask> tasks = batch("run" + r);
        long t0 = System.nanoTime();
        pgtask.enqueueAll(tasks);
        batchRates[r] = rate(BATCH, System.nanoTime() - t0);
      }
      Arrays.sort(batchRates);
      report("Java batch of 10,000 (PgTask.enqueueAll), median of " + RUNS, batchRates[RUNS / 2],
          "runs: " + Arrays.toString(Arrays.stream(batchRates).mapToLong(Math::round).toArray()));

      try (Connection c = db.connect()) {
        try (PreparedStatement ps = c.prepareStatement("""
            CREATE TABLE public.bench_scratch (
              id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, kind text NOT NULL, payload jsonb NOT NULL,
              queue text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())""")) {
          ps.execute();
        }
        // single pgtask.enqueue, autocommit
        try (PreparedStatement ps = c.prepareStatement(
            "SELECT pgtask.enqueue(kind => ?, payload => ?::jsonb, queue => ?)")) {
          singles(ps, 200); // warm-up
          report("single SELECT pgtask.enqueue(...), autocommit, one connection", rate(SINGLES, singles(ps, SINGLES)), "");
        }
        // bare insert + notify, autocommit
        try (PreparedStatement ps = c.prepareStatement("""
            WITH i AS (INSERT INTO public.bench_scratch (kind, payload, queue) VALUES (?, ?::jsonb, ?) RETURNING id, queue)
            SELECT i.id, pg_notify('bench', i.queue) FROM i""")) {
          singles(ps, 200);
          report("single bare INSERT + pg_notify, autocommit, one connection", rate(SINGLES, singles(ps, SINGLES)), "");
        }
      }

      // single PgTask.enqueue through the pool
      for (int i = 0; i < 200; i++) {
        pgtask.enqueue(NewTask.of("bench.single", Map.of("i", i)));
      }
      long t0 = System.nanoTime();
      for (int i = 0; i < SINGLES; i++) {
        pgtask.enqueue(NewTask.of("bench.single", Map.of("i", i)));
      }
      report("single PgTask.enqueue, autocommit, pooled", rate(SINGLES, System.nanoTime() - t0), "");
    }
  }

  private static List<NewTask> batch(String tag) {
    List<NewTask> tasks = new ArrayList<>(BATCH);
    for (int i = 0; i < BATCH; i++) {
      tasks.add(NewTask.of("bench.batch", Map.of("tag", tag, "i", i), TaskOptions.defaults().withQueue("bench")));
    }
    return tasks;
  }

  /** Runs the single-task statement {@code n} times in autocommit; returns the elapsed nanoseconds. */
  private static long singles(PreparedStatement ps, int n) throws SQLException {
    long t0 = System.nanoTime();
    for (int i = 0; i < n; i++) {
      ps.setString(1, "bench.single");
      ps.setString(2, "{\"i\": " + i + "}");
      ps.setString(3, "bench");
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
      }
    }
    return System.nanoTime() - t0;
  }

  private static double rate(int tasks, long nanos) {
    return tasks / (nanos / 1e9);
  }

  private static void report(String what, double perSecond, String extra) {
    System.out.printf(Locale.ROOT, "%-66s %,10.0f tasks/s %s%n", what, perSecond, extra);
  }
}
