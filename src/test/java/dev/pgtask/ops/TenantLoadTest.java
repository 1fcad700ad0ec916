package dev.pgtask.ops;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;
import static org.awaitility.Awaitility.await;

import dev.pgtask.NewTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskOptions;
import dev.pgtask.testsupport.QueueDatabase;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * pgtask.tenant_load, as docs/capacity.md walks through it: a tenant whose tasks arrive faster than
 * its one-at-a-time critical section can finish them shows a utilisation of at least 1 and a backlog
 * that grows, however many workers run; the rates of a burst are taken over the time since its first
 * task, never under the minimum span; the view is tenant_load_over(15 minutes, 1 minute).
 */
class TenantLoadTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("tenant_load", 16);

  /** One tenant_load_over row: tenant and the numbers, as doubles (NULL as NaN). */
  private record Load(String tenant, double arrivals, double completions, double meanRun, double p95Run,
      double utilisation, long backlog, double trend, double window) {}

  private static List<Load> load(String from) throws Exception {
    List<Load> out = new ArrayList<>();
    for (String row : queue.sql().rows("SELECT tenant, arrivals_per_min, completions_per_min, mean_run_s, p95_run_s,"
        + " utilisation, backlog, backlog_trend_per_min, rate_window_min FROM " + from)) {
      String[] f = row.split("\t");
      out.add(new Load(f[0], d(f[1]), d(f[2]), d(f[3]), d(f[4]), d(f[5]), Long.parseLong(f[6]), d(f[7]), d(f[8])));
    }
    return out;
  }

  private static double d(String s) {
    return "null".equals(s) ? Double.NaN : Double.parseDouble(s);
  }

  private static Load of(List<Load> rows, String tenant) {
    return rows.stream().filter(r -> r.tenant().equals(tenant)).findFirst()
        .orElseThrow(() -> new AssertionError("no row for tenant " + tenant + " in " + rows));
  }

  @Test
  void aTenantWhoseArrivalsOutpaceItsCriticalSectionShowsUtilisationOverOneAndAGrowingBacklog() throws Exception {
    // the arithmetic scaled down 1:60 in time: a 300 ms critical section (capacity 200 a minute)
    // and 400 arrivals a minute, against a tenant of 10 ms tasks at the same rate; rates over the last
    // 30 s, at least 5 s. Two workers of 4 threads each: more workers do not help the slow tenant.
    PgTaskWorker.Builder b = PgTaskWorker.builder(queue.pool()).queues("load").concurrency(4)
        .tenantDeferDelay(Duration.ofMillis(20))
        .handler("load.slow", (ctx, p) -> Thread.sleep(300)) // the slow kind's work
        .handler("load.fast", (ctx, p) -> Thread.sleep(10)); // the fast kind's work
    ScheduledExecutorService arrivals = Executors.newSingleThreadScheduledExecutor();
    try (PgTaskWorker w1 = b.workerId("load-1").build().start(); PgTaskWorker w2 = b.workerId("load-2").build().start()) {
      arrivals.scheduleAtFixedRate(() -> {
        queue.pgtask().enqueue(NewTask.of("load.slow", null, TaskOptions.defaults().withQueue("load").withTenant("slow")));
        queue.pgtask().enqueue(NewTask.of("load.fast", null, TaskOptions.defaults().withQueue("load").withTenant("fast")));
      }, 0, 150, TimeUnit.MILLISECONDS);
      String over = "pgtask.tenant_load_over(interval '30 seconds', interval '5 seconds')";
      await("ten seconds of arrivals").atMost(Duration.ofSeconds(60))
          .until(() -> queue.sql().count("SELECT count(*) FROM pgtask.tasks WHERE tenant = 'slow'") >= 66);
      List<Load> first = load(over);
      await("five more seconds of arrivals").atMost(Duration.ofSeconds(60))
          .until(() -> queue.sql().count("SELECT count(*) FROM pgtask.tasks WHERE tenant = 'slow'") >= 100);
      List<Load> second = load(over);
      arrivals.shutdownNow();
      System.out.println("tenant_load_over(30 s, 5 s), scaled 1:60:\n  " + first + "\n  " + second);

      Load slow = of(second, "slow");
      Load fast = of(second, "fast");
      assertThat(second.get(0).tenant()).as("the busiest tenant first").isEqualTo("slow");
      assertThat(slow.meanRun()).as("slow's mean run time (s)").isBetween(0.29, 1.0);
      assertThat(slow.utilisation()).as("slow's utilisation").isGreaterThanOrEqualTo(1.0);
      assertThat(slow.utilisation()).as("utilisation = arrivals per minute x mean run time / 60")
          .isCloseTo(slow.arrivals() * slow.meanRun() / 60, within(0.02));
      assertThat(slow.completions()).as("slow's completions a minute: one at a time, whatever the workers")
          .isLessThanOrEqualTo(60 / 0.29);
      assertThat(slow.trend()).as("slow's backlog trend a minute").isPositive();
      assertThat(slow.backlog()).as("slow's backlog grows").isGreaterThan(of(first, "slow").backlog());
      // under load the 10 ms tasks take longer from claim to finish too: compared, not bounded
      assertThat(fast.meanRun()).as("fast's mean run time (s)").isLessThan(slow.meanRun() / 2);
      assertThat(fast.utilisation()).as("fast's utilisation").isLessThan(slow.utilisation());
    } finally {
      arrivals.shutdownNow();
    }
  }

  @Test
  void theCapacityPageExampleAndABurstShowTheirTrueRates() throws Exception {
    queue.sql().exec("DELETE FROM pgtask.task");
    try (InputStream in = TenantLoadTest.class.getResourceAsStream("/dev/pgtask/capacity-example.sql")) {
      queue.sql().exec(new String(in.readAllBytes(), StandardCharsets.UTF_8));
    }
    // a burst of three tasks 10 s ago: its rates are taken over one minute, not 10 s; with no run
    // time known yet, its utilisation is unknown (NULL, sorted last)
    queue.sql().exec("INSERT INTO pgtask.task (kind, queue, tenant_id, created_at, run_at)"
        + " SELECT 'report.build', 'reports', pgtask.tenant_id('blip'), now() - interval '10 seconds', now() FROM generate_series(1, 3)");
    List<Load> rows = load("pgtask.tenant_load");
    System.out.println("pgtask.tenant_load over the capacity page's history:\n  " + rows);
    assertThat(rows).extracting(Load::tenant).as("busiest first").containsExactly("acme", "initech", "globex", "blip");

    Load acme = of(rows, "acme");
    assertThat(acme).as("acme: 5 a minute into a 20-s critical section")
        .isEqualTo(new Load("acme", 5.0, 3.0, 20.0, 20.0, 1.67, 60, 2.0, 15.0));
    // a burst that began two minutes ago: its rates over those two minutes, not the 15 of the window
    Load initech = of(rows, "initech");
    assertThat(initech.window()).as("initech's rate window (min)").isBetween(1.9, 2.0);
    assertThat(initech.arrivals()).as("initech's arrivals a minute").isCloseTo(12 / initech.window(), within(0.02));
    assertThat(initech.utilisation()).as("initech's utilisation").isCloseTo(0.83, within(0.02));
    Load blip = of(rows, "blip");
    assertThat(blip.window()).as("blip's rate window: never under a minute").isEqualTo(1.0);
    assertThat(blip.arrivals()).isEqualTo(3.0);
    assertThat(blip.backlog()).isEqualTo(3);
    assertThat(Double.isNaN(blip.utilisation())).as("no run time known for blip yet").isTrue();
    Load globex = of(rows, "globex");
    assertThat(globex.utilisation()).isCloseTo(0.13, within(0.01));
    assertThat(globex.backlog()).isZero();
    assertThat(queue.sql().count("SELECT count(*) FROM (SELECT * FROM pgtask.tenant_load EXCEPT"
        + " SELECT * FROM pgtask.tenant_load_over(interval '15 minutes', interval '1 minute')) d"))
        .as("the view is tenant_load_over(15 minutes, 1 minute)").isZero();

    // pgtask status shows the top of it
    java.io.StringWriter out = new java.io.StringWriter();
    picocli.CommandLine cmd = dev.pgtask.cli.Main.commandLine();
    cmd.setOut(new java.io.PrintWriter(out, true));
    assertThat(cmd.execute("status", "--url", queue.database().fullUrl())).isZero();
    assertThat(out.toString()).as("pgtask status")
        .contains("tenant load, last 15 minutes, busiest first (pgtask.tenant_load;")
        // the clock moved since the view was read above: acme's row first, its utilisation over 1
        .containsPattern("TREND/MIN\\R+acme +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +1\\.[0-9]{2} +60 ");
    queue.sql().exec("DELETE FROM pgtask.task");
  }

  @Test
  void utilisationIsTheShareOfTheTenantsNSlotsItsArrivalsNeed() throws Exception {
    queue.sql().exec("DELETE FROM pgtask.task");
    try (InputStream in = TenantLoadTest.class.getResourceAsStream("/dev/pgtask/capacity-example.sql")) {
      queue.sql().exec(new String(in.readAllBytes(), StandardCharsets.UTF_8));
    }
    try {
      assertThat(of(load("pgtask.tenant_load"), "acme").utilisation()).as("acme with one slot").isEqualTo(1.67);
      // docs/capacity.md, "N slots": the same arrivals and run times over three slots
      queue.sql().exec("SELECT pgtask.set_limit('tenant', 'acme', max_running => 3)");
      List<Load> rows = load("pgtask.tenant_load");
      Load acme = of(rows, "acme");
      assertThat(acme.utilisation()).as("acme with max_running 3: 5 x 20 / 60 / 3").isEqualTo(0.56);
      assertThat(acme.arrivals()).as("the rates do not change, only the capacity").isEqualTo(5.0);
      assertThat(acme.meanRun()).isEqualTo(20.0);
      assertThat(of(rows, "globex").utilisation()).as("a tenant without a limit: one slot").isCloseTo(0.13, within(0.01));
      assertThat(rows).extracting(Load::tenant).as("busiest first, by the utilisation of their slots")
          .containsExactly("initech", "acme", "globex");
      queue.sql().exec("SELECT pgtask.clear_limit('tenant', 'acme')");
      assertThat(of(load("pgtask.tenant_load"), "acme").utilisation()).as("acme without a limit again").isEqualTo(1.67);
    } finally {
      queue.sql().exec("SELECT pgtask.clear_limit('tenant', 'acme')");
      queue.sql().exec("DELETE FROM pgtask.task");
    }
  }
}
