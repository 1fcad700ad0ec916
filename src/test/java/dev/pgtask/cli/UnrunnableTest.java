package dev.pgtask.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pgtask.NewTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskOptions;
import dev.pgtask.internal.sql.MaintenanceQueries;
import dev.pgtask.internal.sql.Sql;
import dev.pgtask.testsupport.QueueDatabase;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What no live worker can run, as docs/operations.md describes it: pgtask.unrunnable lists due tasks
 * in queues no live worker serves and due tasks whose kind no live worker of their queue handles,
 * with the tenants waiting behind them; pgtask.health sums them; {@code pgtask status} shows them
 * when there are any; the workers' unhandled-kinds pass finds the same. And pgtask.tasks names a
 * task behind its tenant's head "waiting", and shows no last_error for a task that completed after
 * failing.
 */
class UnrunnableTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("unrunnable", 8);

  @Test
  void dueTasksNoLiveWorkerCanRunAreListedSummedAndShownByStatus() throws Exception {
    try (PgTaskWorker worker = PgTaskWorker.builder(queue.pool()).workerId("only-default").queues("default").concurrency(2)
        .retryBackoff(Duration.ofMillis(10), Duration.ofMillis(10))
        .handler("known", (ctx, p) -> {
          if (ctx.attempt() == 1) {
            throw new IllegalStateException("first attempt fails");
          }
        })
        .build().start()) {
      await().atMost(Duration.ofSeconds(10))
          .until(() -> queue.sql().count("SELECT count(*) FROM pgtask.workers WHERE id = 'only-default'") == 1);
      assertThat(queue.sql().count("SELECT count(*) FROM pgtask.unrunnable")).as("unrunnable rows with nothing due").isZero();
      assertThat(queue.sql().text("SELECT unserved_tasks || ' ' || unhandled_tasks || ' ' || tenants_stuck FROM pgtask.health"))
          .as("health with nothing due").isEqualTo("0 0 0");
      assertThat(CliRun.of("status", "--url", queue.database().fullUrl()).out()).as("status with nothing unrunnable")
          .doesNotContain("not runnable");

      TaskOptions acme = TaskOptions.defaults().withTenant("acme");
      queue.pgtask().enqueue(NewTask.of("unknown", null));
      queue.pgtask().enqueue(NewTask.of("unknown", null));
      queue.pgtask().enqueue(NewTask.of("known", null, acme.withQueue("nobody")));
      long behind = queue.pgtask().enqueue(NewTask.of("known", null, acme.withQueue("nobody")));
      // the same tenant in the served queue is not held back by its head in the unserved one
      long served = queue.pgtask().enqueue(NewTask.of("known", null, acme));
      await("acme's task in the served queue completes").atMost(Duration.ofSeconds(10))
          .until(() -> "completed".equals(queue.sql().text("SELECT state FROM pgtask.tasks WHERE id = " + served)));

      assertThat(queue.sql().rows("SELECT queue, kind, reason, tasks, tenants, waiting_behind FROM pgtask.unrunnable ORDER BY queue"))
          .as("pgtask.unrunnable")
          .containsExactly("default\tunknown\tunhandled_kind\t2\t0\t0", "nobody\tknown\tunserved_queue\t1\t1\t1");
      assertThat(queue.sql().text("SELECT unserved_tasks || ' ' || unhandled_tasks || ' ' || tenants_stuck FROM pgtask.health"))
          .as("pgtask.health: unserved, unhandled, tenants stuck").isEqualTo("1 2 1");
      String status = CliRun.of("status", "--url", queue.database().fullUrl()).out();
      assertThat(status).as("pgtask status")
          .contains("not runnable        1 due in queues no live worker serves, 2 due of kinds no live worker of their "
              + "queue handles, 1 tenant(s) waiting behind them")
          .contains("not runnable by any live worker (pgtask.unrunnable)")
          .containsPattern("nobody +known +unserved_queue +1 ");
      assertThat(MaintenanceQueries.unhandledKinds(Sql.using(queue.pool()), java.util.List.of("default")))
          .as("what the worker's unhandled-kinds pass warns about for its queue")
          .containsExactly(new MaintenanceQueries.Unhandled("default", "unknown", 2));

      // pgtask.tasks: waiting behind the tenant's head; a completed task shows no last error
      assertThat(queue.sql().text("SELECT state FROM pgtask.tasks WHERE id = " + behind))
          .as("state of a task behind its tenant's head").isEqualTo("waiting");
      assertThat(queue.sql().text("SELECT attempt || ' ' || coalesce(last_error, 'NULL') FROM pgtask.tasks WHERE id = " + served))
          .as("attempt and last_error of a task that completed on its second attempt").isEqualTo("2 NULL");
      assertThat(queue.sql().count("SELECT jsonb_array_length(errors) FROM pgtask.task WHERE id = " + served))
          .as("errors kept in the history of the completed task").isEqualTo(1);
      assertThat(CliRun.of("tasks", "--state", "waiting", "--url", queue.database().fullUrl()).out())
          .as("pgtask tasks --state waiting").contains(Long.toString(behind));
    }
  }
}
