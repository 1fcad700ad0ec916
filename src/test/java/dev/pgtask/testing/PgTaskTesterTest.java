package dev.pgtask.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.pgtask.HandlerOptions;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.SnoozeTaskException;
import dev.pgtask.TaskArgs;
import dev.pgtask.TaskNotFoundException;
import dev.pgtask.TaskOptions;
import dev.pgtask.TaskState;
import dev.pgtask.TaskStateException;
import dev.pgtask.testing.TaskRun.Result;
import dev.pgtask.testsupport.QueueDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The testing helpers' promises, against a real server: drain() and runTask() run tasks in the
 * calling thread through the worker's own execution path (a failure rolls back the handler's
 * writes and records the retry exactly as a worker does; tenant locks are honoured), and the
 * assertions see what was enqueued inside an open transaction and after commit.
 */
class PgTaskTesterTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("tester", 6,
      "CREATE TABLE invoice_mail (invoice_id bigint, attempt int)");

  record SendInvoice(long invoiceId) implements TaskArgs {
    public String kind() {
      return "invoice.send";
    }
  }

  private static PgTaskWorker.Builder builder(String queueName) {
    return PgTaskWorker.builder(queue.pool()).queues(queueName).concurrency(2)
        .retryBackoff(Duration.ofMinutes(10), Duration.ofHours(1));
  }

  private static void mail(Connection c, long invoiceId, int attempt) throws Exception {
    try (PreparedStatement ps = c.prepareStatement("INSERT INTO invoice_mail VALUES (?, ?)")) {
      ps.setLong(1, invoiceId);
      ps.setInt(2, attempt);
      ps.executeUpdate();
    }
  }

  private static long mails(long invoiceId) throws Exception {
    return queue.sql().count("SELECT count(*) FROM invoice_mail WHERE invoice_id = " + invoiceId);
  }

  @Test
  void drainRunsEveryDueTaskInTheCallingThreadWithTheRegisteredHandlers() throws Exception {
    Thread test = Thread.currentThread();
    List<Thread> ranOn = new CopyOnWriteArrayList<>();
    PgTaskWorker worker = builder("drain_basic")
        .handler("invoice.send", SendInvoice.class, (ctx, invoice) -> {
          ranOn.add(Thread.currentThread());
          mail(ctx.connection(), invoice.invoiceId(), ctx.attempt());
        })
        .build();
    TaskOptions opts = TaskOptions.defaults().withQueue("drain_basic");
    long a = queue.pgtask().enqueue(new SendInvoice(101), opts);
    long b = queue.pgtask().enqueue(new SendInvoice(102), opts.withTenant("acme"));
    long later = queue.pgtask().enqueue(new SendInvoice(103), opts.withDelay(Duration.ofHours(1)));

    DrainReport report = PgTaskTester.of(worker).drain();

    assertThat(report.assertAllCompleted().runs()).extracting(TaskRun::taskId).containsExactly(a, b);
    assertThat(ranOn).as("handlers ran in the test's thread").containsOnly(test).hasSize(2);
    assertThat(mails(101) + mails(102)).as("the handlers' writes committed with their tasks").isEqualTo(2);
    assertThat(report.runs()).allSatisfy(r -> assertThat(r.state()).isEqualTo(TaskState.COMPLETED));
    assertThat(mails(103)).as("a task due in an hour is not run").isZero();
    assertThat(queue.sql().text("SELECT state FROM pgtask.tasks WHERE id = " + later)).isEqualTo("scheduled");
    assertThat(PgTaskTester.of(worker).drain().isEmpty()).as("nothing due the second time").isTrue();
  }

  @Test
  void aHandlerFailureInDrainRollsBackItsWritesAndRecordsTheRetryExactlyAsAWorkerDoes() throws Exception {
    PgTaskWorker.Builder b = builder("drain_failure")
        .handler("invoice.send", SendInvoice.class, (ctx, invoice) -> {
          mail(ctx.connection(), invoice.invoiceId(), ctx.attempt());
          throw new IllegalStateException("mail server refused invoice " + invoice.invoiceId());
        });
    TaskOptions opts = TaskOptions.defaults().withQueue("drain_failure").withMaxAttempts(3);
    long drained = queue.pgtask().enqueue(new SendInvoice(201), opts);

    DrainReport report = PgTaskTester.of(b.build()).drain();

    assertThat(report.runs()).hasSize(1);
    TaskRun run = report.runs().get(0);
    assertThat(run.result()).isEqualTo(Result.RETRY_SCHEDULED);
    assertThat(run.attempt()).isEqualTo(1);
    assertThat(run.error()).isEqualTo("java.lang.IllegalStateException: mail server refused invoice 201");
    assertThat(run.state()).isEqualTo(TaskState.RETRYABLE);
    assertThat(mails(201)).as("the failed attempt's write was rolled back").isZero();

    // the same task on a real worker, for comparison
    long onWorker = queue.pgtask().enqueue(new SendInvoice(202), opts);
    PgTaskWorker real = b.workerId("real-worker").build().start();
    try {
      await().atMost(Duration.ofSeconds(20)).until(() -> "retryable".equals(
          queue.sql().text("SELECT state FROM pgtask.tasks WHERE id = " + onWorker)));
    } finally {
      real.close();
    }
    assertThat(mails(202)).isZero();
    String shape = "SELECT state || ' ' || attempt || ' ' || max_attempts || ' ' || (owner IS NULL) || ' '"
        + " || (lease_until IS NULL) || ' ' || jsonb_array_length(errors) || ' ' || (errors -> 0 ->> 'attempt')"
        + " || ' ' || replace(errors -> 0 ->> 'error', '%d', 'N')"
        + " || ' ' || (SELECT string_agg(k, ',' ORDER BY k) FROM jsonb_object_keys(errors -> 0) k)"
        + " FROM pgtask.task WHERE id = ";
    assertThat(queue.sql().text(String.format(shape, 201) + drained))
        .as("the row a drained failure leaves is the row a worker's failure leaves")
        .isEqualTo(queue.sql().text(String.format(shape, 202) + onWorker));
    for (long id : new long[] {drained, onWorker}) {
      double delay = queue.sql().doubles("SELECT extract(epoch FROM run_at - attempted_at) FROM pgtask.task WHERE id = "
          + id).get(0);
      assertThat(delay).as("retry backoff of the first attempt: 10 min ± 10%").isBetween(539.0, 661.0);
    }
    assertThat(run.runAt()).isAfter(Instant.now().plus(Duration.ofMinutes(8)));
  }

  @Test
  void drainHonoursTenantLocksHeldElsewhere() throws Exception {
    AtomicInteger calls = new AtomicInteger();
    PgTaskWorker worker = builder("drain_tenant").tenantDeferDelay(Duration.ofMinutes(5))
        .handler("invoice.send", SendInvoice.class, (ctx, invoice) -> calls.incrementAndGet())
        .build();
    long id = queue.pgtask().enqueue(new SendInvoice(301),
        TaskOptions.defaults().withQueue("drain_tenant").withTenant("locked-tenant"));
    PgTaskTester tester = PgTaskTester.of(worker);
    try (Connection other = queue.pool().getConnection()) {
      other.setAutoCommit(false);
      try (PreparedStatement ps = other.prepareStatement("SELECT pg_try_advisory_xact_lock("
          + "(SELECT lock_namespace FROM pgtask.settings), pgtask.tenant_id('locked-tenant'))");
          ResultSet rs = ps.executeQuery()) {
        rs.next();
        assertThat(rs.getBoolean(1)).as("the test holds the tenant's lock").isTrue();
      }
      DrainReport report = tester.drain();
      assertThat(report.runs()).extracting(TaskRun::result).containsExactly(Result.DEFERRED);
      assertThat(calls).as("the handler did not run while the tenant's lock was held").hasValue(0);
      assertThat(queue.sql().text("SELECT attempt FROM pgtask.task WHERE id = " + id))
          .as("a deferral spends no attempt").isEqualTo("0");
      assertThat(report.runs().get(0).runAt()).isAfter(Instant.now().plus(Duration.ofMinutes(4)));
      other.rollback();
    }
    TaskRun run = tester.runTask(id);
    assertThat(run.result()).isEqualTo(Result.COMPLETED);
    assertThat(calls).hasValue(1);
  }

  @Test
  void runTaskRunsOneTaskByIdEvenBeforeItIsDue() throws Exception {
    PgTaskWorker worker = builder("run_by_id")
        .handler("invoice.send", SendInvoice.class, (ctx, invoice) -> mail(ctx.connection(), invoice.invoiceId(),
            ctx.attempt()))
        .build();
    TaskOptions opts = TaskOptions.defaults().withQueue("run_by_id");
    long other = queue.pgtask().enqueue(new SendInvoice(401), opts);
    long scheduled = queue.pgtask().enqueue(new SendInvoice(402), opts.withDelay(Duration.ofHours(2)));
    PgTaskTester tester = PgTaskTester.of(worker);

    TaskRun run = tester.runTask(scheduled);

    assertThat(run.taskId()).isEqualTo(scheduled);
    assertThat(run.result()).isEqualTo(Result.COMPLETED);
    assertThat(mails(402)).isEqualTo(1);
    assertThat(mails(401)).as("only the task asked for ran").isZero();
    assertThat(queue.sql().text("SELECT state FROM pgtask.tasks WHERE id = " + other)).isEqualTo("available");
    assertThatThrownBy(() -> tester.runTask(scheduled)).isInstanceOf(TaskStateException.class)
        .hasMessageContaining("is completed");
    assertThatThrownBy(() -> tester.runTask(999_999_999L)).isInstanceOf(TaskNotFoundException.class);
    long unknownKind = queue.pgtask().enqueue(dev.pgtask.NewTask.of("report.build", java.util.Map.of(), opts));
    assertThatThrownBy(() -> tester.runTask(unknownKind)).isInstanceOf(TaskStateException.class)
        .hasMessageContaining("no handler");
  }

  @Test
  void drainRunsTasksTheHandlersEnqueueAndPlainModeTasks() throws Exception {
    List<String> ran = new CopyOnWriteArrayList<>();
    PgTaskWorker worker = builder("drain_chain")
        .handler("invoice.send", SendInvoice.class, (ctx, invoice) -> {
          ran.add("send " + invoice.invoiceId());
          queue.pgtask().enqueue(ctx.connection(), dev.pgtask.NewTask.of("invoice.notify",
              java.util.Map.of("invoiceId", invoice.invoiceId()), TaskOptions.defaults().withQueue("drain_chain")));
        })
        .handler("invoice.notify", com.fasterxml.jackson.databind.JsonNode.class,
            (ctx, payload) -> ran.add("notify " + payload.get("invoiceId").asLong() + " plain " + (ctx.tenant() == null)),
            HandlerOptions.defaults().withMode(HandlerOptions.Mode.PLAIN))
        .build();
    queue.pgtask().enqueue(new SendInvoice(501), TaskOptions.defaults().withQueue("drain_chain"));

    DrainReport report = PgTaskTester.of(worker).drain().assertAllCompleted();

    assertThat(ran).containsExactly("send 501", "notify 501 plain true");
    assertThat(report.runs()).extracting(TaskRun::kind).containsExactly("invoice.send", "invoice.notify");
    assertThat(report.runs().get(1).state()).as("the plain task's completion is written before drain returns")
        .isEqualTo(TaskState.COMPLETED);
  }

  @Test
  void drainStopsWithAClearErrorWhenTasksKeepComingDue() {
    PgTaskWorker worker = builder("drain_loop")
        .handler("invoice.send", SendInvoice.class, (ctx, invoice) -> {
          throw new SnoozeTaskException(Duration.ZERO);
        })
        .build();
    queue.pgtask().enqueue(new SendInvoice(601), TaskOptions.defaults().withQueue("drain_loop"));
    assertThatThrownBy(() -> PgTaskTester.of(worker).drain(5)).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("drain made 5 attempts and tasks are still due").hasMessageContaining("SNOOZED");
  }

  @Test
  void enqueuedTasksAreSeenInsideTheOpenTransactionAndAfterCommit() throws Exception {
    PgTaskWorker worker = builder("assert_enqueued").handler("invoice.send", SendInvoice.class, (ctx, i) -> { })
        .build();
    PgTaskTester tester = PgTaskTester.of(worker);
    TaskOptions opts = TaskOptions.defaults().withQueue("assert_enqueued").withTenant("acme");
    Instant before = Instant.now().minusSeconds(5);
    try (Connection tx = queue.pool().getConnection()) {
      tx.setAutoCommit(false);
      long id = queue.pgtask().enqueue(tx, new SendInvoice(701), opts.withDelay(Duration.ofMinutes(30)));
      EnqueuedTask found = tester.enqueued(tx).ofKind("invoice.send").inQueue("assert_enqueued").forTenant("acme")
          .withPayload(SendInvoice.class, p -> p.invoiceId() == 701)
          .runAtBetween(Instant.now().plus(Duration.ofMinutes(29)), Instant.now().plus(Duration.ofMinutes(31)))
          .inState(TaskState.SCHEDULED)
          .assertSingle();
      assertThat(found.id()).isEqualTo(id);
      assertThat(found.payload(SendInvoice.class)).isEqualTo(new SendInvoice(701));
      tester.enqueued(tx).ofKind("invoice.send").forTenant("globex").assertNone();
      tester.enqueued(tx).ofKind("invoice.send").withPayload(SendInvoice.class, p -> p.invoiceId() == 702)
          .assertNone();
      tester.enqueued().inQueue("assert_enqueued").assertNone(); // not committed: invisible to others
      tx.rollback();
    }
    tester.enqueued().inQueue("assert_enqueued").assertNone();

    long committed = queue.pgtask().enqueue(new SendInvoice(703), opts);
    assertThat(tester.enqueued().inQueue("assert_enqueued").runAtBetween(before, Instant.now().plusSeconds(5))
        .withPayload(SendInvoice.class, p -> p.invoiceId() == 703).assertSingle().id()).isEqualTo(committed);
    assertThat(EnqueuedTasks.in(queue.pool()).inQueue("assert_enqueued").withoutTenant().count()).isZero();
    assertThat(EnqueuedTasks.in(queue.pool()).inQueue("assert_enqueued").runAt(t -> t.isBefore(before)).count())
        .isZero();

    assertThatThrownBy(() -> tester.enqueued().ofKind("invoice.send").inQueue("assert_enqueued")
        .withPayload(SendInvoice.class, p -> p.invoiceId() == 9).assertSingle())
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("expected 1 task(s) with kind invoice.send, queue assert_enqueued, payload as "
            + "SendInvoice matching a predicate, found 0")
        .hasMessageContaining("#" + committed + " invoice.send queue=assert_enqueued tenant=acme available")
        .hasMessageContaining("{\"invoiceId\":703}");
  }
}
