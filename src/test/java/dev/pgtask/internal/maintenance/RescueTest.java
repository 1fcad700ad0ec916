package dev.pgtask.internal.maintenance;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pgtask.NewTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskOptions;
import dev.pgtask.internal.maintenance.Maintenance;
import dev.pgtask.internal.sql.OutcomeQueries;
import dev.pgtask.internal.sql.CompletionQueries;
import dev.pgtask.internal.sql.TaskSql;
import dev.pgtask.internal.maintenance.RescuePass;
import dev.pgtask.internal.sql.ClaimQueries;
import dev.pgtask.internal.sql.Fence;
import dev.pgtask.internal.sql.ExecuteQueries;
import dev.pgtask.internal.sql.Sql;
import dev.pgtask.testsupport.Leaks;
import dev.pgtask.testsupport.QueueDatabase;
import dev.pgtask.testsupport.WorkerFixture;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.jooq.DSLContext;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Rescue of tasks whose worker is gone, never of live ones; fencing of zombies. */
class RescueTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("rescue", 12);

  @RegisterExtension
  final WorkerFixture workers = WorkerFixture.on(queue);

  @BeforeEach
  void clean() throws Exception {
    queue.sql().exec("DELETE FROM pgtask.task");
  }

  private Maintenance maintenance() {
    PgTaskWorker w = PgTaskWorker.builder(queue.pool()).concurrency(2).handler("x", (c, p) -> { }).build();
    return Maintenance.standalone(dev.pgtask.internal.WorkerAccess.config(w));
  }

  /** Claims like a worker that then dies: the claim commits, nothing else happens. */
  private List<ClaimQueries.Claimed> claimAsGhost(int n, String ghost) {
    return ClaimQueries.claimAvailable(queue.pool(), List.of("default"), List.of("test.task"), n, ghost,
        Duration.ofSeconds(30)).tasks();
  }

  private void expireLeases() throws Exception {
    queue.sql().exec("UPDATE pgtask.task SET lease_until = now() - interval '1 second' WHERE state = 'running'");
  }

  @Test
  void aLostWorkersTaskWhoseCancellationWasRequestedEndsCancelledInsteadOfRunningAgain() throws Exception {
    long id = queue.pgtask().enqueue(NewTask.of("test.task", null));
    assertThat(claimAsGhost(1, "ghost:3")).hasSize(1);
    // the ghost's task transaction holds the row (as a worker frozen in its handler would), so the
    // cancellation can only be requested; then the ghost's session dies before acting on it
    Connection task = queue.database().connect();
    task.setAutoCommit(false);
    int pid;
    try (var st = task.createStatement(); var rs = st.executeQuery(
        "SELECT pg_backend_pid() FROM pgtask.task WHERE id = " + id + " FOR NO KEY UPDATE")) {
      rs.next();
      pid = rs.getInt(1);
    }
    assertThat(queue.pgtask().cancel(id)).isEqualTo(dev.pgtask.CancelResult.CANCEL_REQUESTED);
    queue.sql().exec("SELECT pg_terminate_backend(" + pid + ")");
    task.close();
    expireLeases();
    assertThat(maintenance().runNow(RescuePass.class)).isEqualTo(1);
    assertThat(queue.sql().text("SELECT state || ' ' || attempt FROM pgtask.tasks WHERE id = " + id)).isEqualTo("cancelled 1");
    assertThat(queue.sql().text("SELECT string_agg(e ->> 'error', ' | ' ORDER BY ord) FROM pgtask.task, "
        + "jsonb_array_elements(errors) WITH ORDINALITY AS x(e, ord) WHERE id = " + id))
        .startsWith("worker lost: ghost:3").endsWith(TaskSql.CANCELLED_AS_REQUESTED);
    assertThat(queue.sql().count("SELECT count(*) FROM pgtask.cancel_request")).as("requests left after the pass").isZero();
  }

  @Test
  void tasksOfALostWorkerAreRescuedWithAWorkerLostEntry() throws Exception {
    long id = queue.pgtask().enqueue(NewTask.of("test.task", null));
    long exhausted = queue.pgtask().enqueue(NewTask.of("test.task", null, TaskOptions.defaults().withMaxAttempts(1)));
    assertThat(claimAsGhost(10, "ghost:1")).hasSize(2);
    assertThat(maintenance().runNow(RescuePass.class)).as("rescued before the lease expired").isZero();
    expireLeases();
    assertThat(maintenance().runNow(RescuePass.class)).as("rescued after the lease expired").isEqualTo(2);
    assertThat(queue.sql().text("SELECT state || ' ' || attempt FROM pgtask.tasks WHERE id = " + id)).isEqualTo("retryable 1");
    assertThat(queue.sql().text("SELECT last_error FROM pgtask.tasks WHERE id = " + id)).startsWith("worker lost: ghost:1");
    assertThat(queue.sql().text("SELECT state FROM pgtask.tasks WHERE id = " + exhausted)).as("out of attempts").isEqualTo("discarded");
    assertThat(queue.sql().count("SELECT count(*) FROM pgtask.task WHERE id = " + id + " AND run_at <= now()")).as("claimable at once").isEqualTo(1);
  }

  @Test
  void aRescuedAttemptIsRecordedInTheAttemptHistoryAsLostWithItsWorker() throws Exception {
    long id = queue.pgtask().enqueue(NewTask.of("test.task", null));
    assertThat(claimAsGhost(1, "ghost:7")).hasSize(1);
    expireLeases();
    assertThat(maintenance().runNow(RescuePass.class)).isEqualTo(1);
    assertThat(queue.sql().rows("SELECT attempt || ' ' || outcome || ' ' || worker || ' ' || (started_at IS NOT NULL) "
        + "FROM pgtask.task_attempt WHERE task_id = " + id))
        .as("the lost attempt's history row").containsExactly("1 worker_lost ghost:7 true");
    assertThat(queue.sql().text("SELECT error FROM pgtask.task_attempt WHERE task_id = " + id))
        .as("its error").startsWith("worker lost: ghost:7 stopped renewing its claim (lease expired at ");
  }

  @Test
  void aSlowButAliveWorkerIsNeverRobbed() throws Exception {
    workers.start(workers.builder().concurrency(2).leaseDuration(Duration.ofMillis(200))
        .handler("test.task", (ctx, p) -> Thread.sleep(2_000))); // work that outlasts the lease
    long id = queue.pgtask().enqueue(NewTask.of("test.task", null));
    await().atMost(Duration.ofSeconds(5)).until(() -> queue.sql().count(
        "SELECT count(*) FROM pgtask.task WHERE id = " + id + " AND state = 'running' AND lease_until < now()") == 1);
    assertThat(maintenance().runNow(RescuePass.class)).as("tasks rescued from a live executor holding the row").isZero();
    await().atMost(Duration.ofSeconds(10)).until(() -> "completed".equals(queue.sql().text("SELECT state FROM pgtask.tasks WHERE id = " + id)));
    assertThat(queue.sql().count("SELECT attempt FROM pgtask.task WHERE id = " + id)).as("attempts used").isEqualTo(1);
    workers.closeAll();
    Leaks.assertNoAdvisoryLocks(queue.database());
  }

  @Test
  void aZombieCannotCompleteOrFailATaskSomeoneElseClaimed() throws Exception {
    long id = queue.pgtask().enqueue(NewTask.of("test.task", null));
    ClaimQueries.Claimed ghostClaim = claimAsGhost(1, "zombie:1").get(0);
    expireLeases();
    assertThat(maintenance().runNow(RescuePass.class)).isEqualTo(1);
    ClaimQueries.Claimed fresh = claimAsGhost(1, "fresh:2").get(0);
    assertThat(fresh.attempt()).isEqualTo(2);
    Fence zombie = new Fence(id, "zombie:1", ghostClaim.attempt());
    try (Connection c = queue.pool().getConnection()) {
      c.setAutoCommit(false);
      DSLContext tx = Sql.using(c);
      assertThat(ExecuteQueries.lockForExecution(c, java.util.List.of(zombie), "pgtask test", 10_000, 1, false))
          .as("tasks the zombie re-locked (none: fenced out)").isEmpty();
      assertThat(CompletionQueries.completeAll(c, java.util.List.of(zombie))).as("rows the zombie completed").isZero();
      c.rollback();
      c.setAutoCommit(true);
      assertThat(OutcomeQueries.fail(Sql.using(c), zombie, "late failure", null, Duration.ZERO, false)).isNull();
      assertThat(OutcomeQueries.release(Sql.using(c), zombie, Duration.ZERO)).as("state after the zombie released it (none: fenced out)").isNull();
    }
    assertThat(queue.sql().text("SELECT state || ' ' || attempt FROM pgtask.tasks WHERE id = " + id)).isEqualTo("running 2");
    assertThat(queue.sql().text("SELECT owner FROM pgtask.task WHERE id = " + id)).isEqualTo("fresh:2");
  }

  @Test
  void concurrentRescuePassesNeverRescueATaskTwice() throws Exception {
    List<NewTask> tasks = new ArrayList<>();
    for (int i = 0; i < 300; i++) {
      tasks.add(NewTask.of("test.task", null));
    }
    queue.pgtask().enqueueAll(tasks);
    assertThat(claimAsGhost(300, "ghost:2")).hasSize(300);
    expireLeases();
    ExecutorService threads = Executors.newFixedThreadPool(4);
    List<Callable<Integer>> passes = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      Maintenance m = maintenance();
      passes.add(() -> {
        int n = 0;
        for (int k = 0; k < 5; k++) {
          n += m.runNow(RescuePass.class);
        }
        return n;
      });
    }
    int total = 0;
    for (Future<Integer> f : threads.invokeAll(passes)) {
      total += f.get();
    }
    threads.shutdown();
    assertThat(total).as("tasks rescued by all passes together").isEqualTo(300);
    assertThat(queue.sql().count("SELECT count(*) FROM pgtask.task WHERE jsonb_array_length(errors) <> 1"))
        .as("tasks with other than exactly one worker-lost entry").isZero();
    Leaks.assertNoAdvisoryLocks(queue.database());
  }
}
