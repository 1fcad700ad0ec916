package dev.pgtask.internal.claim;

import dev.pgtask.internal.sql.TaskSql;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pgtask.HandlerOptions;
import dev.pgtask.NewTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskOptions;
import dev.pgtask.testsupport.QueueDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The statements a worker and a producer run for every task are planned a few times per connection,
 * then the server keeps one generic plan. A statement planned on every execution costs about half a
 * millisecond of server time each time: more than running it.
 */
class PlanCacheTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("plans", 5);

  /** One row of pg_prepared_statements on one pooled connection. */
  record Plans(int backend, String statement, long generic, long custom) {
    @Override
    public String toString() {
      return "backend " + backend + ": " + generic + " generic, " + custom + " custom plans: "
          + (statement.length() > 100 ? statement.substring(0, 100) + "..." : statement);
    }
  }

  @Test
  void hotPathStatementsSettleOnGenericPlans() throws Exception {
    // statistics that make every custom plan look cheap: the queue is full of another kind, and the
    // kinds the worker claims are missing from the statistics
    queue.sql().exec("INSERT INTO pgtask.task (kind, payload) SELECT 'plans.other', '{}' FROM generate_series(1, 5000)");
    queue.sql().exec("ANALYZE pgtask.task");

    int n = 120;
    int idle = 40;
    AtomicInteger ran = new AtomicInteger();
    for (int i = 0; i < n; i++) {
      queue.pgtask().enqueue(NewTask.of("plans.tx", null, TaskOptions.defaults().withTenant("t" + (i % 7))));
      queue.pgtask().enqueue(NewTask.of("plans.plain", null));
    }
    List<NewTask> batch = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      batch.add(NewTask.of("plans.batched", null, TaskOptions.defaults().withTenant("b" + (i % 5))));
    }

    try (PgTaskWorker worker = PgTaskWorker.builder(queue.pool()).concurrency(2)
        .handler("plans.tx", (ctx, p) -> ran.incrementAndGet())
        .handler("plans.plain", com.fasterxml.jackson.databind.JsonNode.class, (ctx, p) -> ran.incrementAndGet(), HandlerOptions.defaults().withMode(HandlerOptions.Mode.PLAIN))
        .build().start()) {
      await().atMost(Duration.ofSeconds(60)).until(() -> ran.get() == 2 * n);
      // an idle worker woken by NOTIFY claims and starts its head in one round trip (the statement
      // with setval): one task at a time, each enqueued once the last one is done, so that this
      // statement too runs at least 10 times on one connection whatever the timing above
      for (int i = 0; i < idle; i++) {
        long done = worker.stats().completed();
        queue.pgtask().enqueue(NewTask.of("plans.tx", null, TaskOptions.defaults().withTenant("w")));
        await().atMost(Duration.ofSeconds(30)).until(() -> worker.stats().completed() > done);
      }
    }
    // commit batching: several tasks locked and completed by one statement; four rounds, so that
    // these statements too run at least 10 times on one connection
    for (int i = 0; i < 4; i++) {
      queue.pgtask().enqueueAll(batch);
      try (PgTaskWorker worker = PgTaskWorker.builder(queue.pool()).concurrency(2).prefetch(50)
          .commitBatch(8, Duration.ofMillis(50))
          .handler("plans.batched", com.fasterxml.jackson.databind.JsonNode.class, (ctx, p) -> ran.incrementAndGet(), dev.pgtask.HandlerOptions.defaults().withSharedTransaction())
          .build().start()) {
        int expected = 2 * n + idle + (i + 1) * n;
        await().atMost(Duration.ofSeconds(60)).until(() -> ran.get() == expected);
      }
    }

    // PostgreSQL 13 keeps no count of which plan an execution used (pg_prepared_statements has
    // generic_plans and custom_plans from 14 on): there, only the workload above is checked
    Assumptions.assumeTrue(serverVersionNum() >= 140000,
        "pg_prepared_statements.generic_plans/custom_plans need PostgreSQL 14+; the plan assertions are skipped on "
            + serverVersionNum());
    List<Plans> plans = preparedStatementsOfEveryPooledConnection();
    List<Plans> hot = plans.stream().filter(p -> p.generic + p.custom >= 10).toList();
    assertThat(hot).as("statements run at least 10 times on one connection").isNotEmpty();
    for (String part : List.of("\"locked\"", "\"pgtask\".\"enqueue\"", "set_config('application_name'",
        "cast('completed' as", "setval('pgtask.claim_head_id'", "currval('pgtask.claim_head_id'")) {
      assertThat(hot).as("a hot statement containing %s", part).anyMatch(p -> p.statement.contains(part));
    }
    // the claims run on their generic plan from the first execution (SET LOCAL plan_cache_mode in
    // their transaction): left to the server's choice, a growing table kept them planned on every
    // execution in some runs
    assertThat(hot.stream().filter(p -> p.statement.contains("\"locked\"")).toList())
        .as("claim statements").isNotEmpty().allMatch(p -> p.custom == 0);
    // five custom plans first; more while the table grows, until the average cost of the custom
    // plans catches up with the generic plan's (see TaskSql.GENERIC_PLAN): at least half of
    // the later executions ran on the generic plan (the fault this test is for planned them all)
    assertThat(hot).as("statements planned on (nearly) every execution")
        .allMatch(p -> p.custom - 5 <= (p.generic + p.custom - 5) / 2);
  }

  private static int serverVersionNum() throws Exception {
    try (Connection c = queue.pool().getConnection(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SHOW server_version_num")) {
      rs.next();
      return Integer.parseInt(rs.getString(1));
    }
  }

  private static List<Plans> preparedStatementsOfEveryPooledConnection() throws Exception {
    List<Connection> held = new ArrayList<>();
    List<Plans> plans = new ArrayList<>();
    try {
      for (int i = 0; i < 5; i++) {
        held.add(queue.pool().getConnection());
      }
      for (Connection c : held) {
        try (Statement st = c.createStatement();
            ResultSet rs = st.executeQuery("SELECT pg_backend_pid(), statement, generic_plans, custom_plans "
                + "FROM pg_prepared_statements")) {
          while (rs.next()) {
            plans.add(new Plans(rs.getInt(1), rs.getString(2), rs.getLong(3), rs.getLong(4)));
          }
        }
      }
    } finally {
      for (Connection c : held) {
        c.close();
      }
    }
    return plans;
  }
}
