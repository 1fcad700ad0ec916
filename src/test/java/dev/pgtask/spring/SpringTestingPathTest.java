package dev.pgtask.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgtask.PgTask;
import dev.pgtask.TaskArgs;
import dev.pgtask.TaskContext;
import dev.pgtask.TaskKind;
import dev.pgtask.testing.DrainReport;
import dev.pgtask.testing.PgTaskTester;
import dev.pgtask.testing.TaskRun;
import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.TestDatabase;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;

/**
 * The Spring testing path of docs/testing.md: with {@code pgtask.worker.auto-startup=false} the
 * worker stays stopped, and {@code PgTaskWorkerLifecycle.tester()} runs what is due (or one task) in
 * the test thread through the real handler beans with the production transaction binding: a failed
 * attempt's JdbcTemplate writes roll back, as in production.
 */
class SpringTestingPathTest {

  @TaskKind("spring.testing.invoice")
  record SendInvoice(long invoiceId, boolean failFirst) implements TaskArgs {}

  /** Writes through the application's JdbcTemplate, then fails its first attempt when asked to. */
  @Component
  public static class SendInvoiceHandler implements PgTaskHandler<SendInvoice> {
    static volatile Thread lastThread;
    private final JdbcTemplate jdbc;

    public SendInvoiceHandler(JdbcTemplate jdbc) {
      this.jdbc = jdbc;
    }

    @Override
    public void handle(TaskContext ctx, SendInvoice task) {
      lastThread = Thread.currentThread();
      jdbc.update("INSERT INTO sent_invoice (invoice_id, attempt) VALUES (?, ?)", task.invoiceId(), ctx.attempt());
      if (task.failFirst() && ctx.attempt() == 1) {
        throw new IllegalStateException("the mail server refused the first attempt");
      }
    }
  }

  @Configuration(proxyBeanMethods = false)
  @EnableAutoConfiguration
  @Import(SendInvoiceHandler.class)
  static class App {}

  static TestDatabase db;
  static Db sql;
  static ConfigurableApplicationContext app;
  static PgTaskTester tester;

  @BeforeAll
  static void start() throws Exception {
    db = TestDatabase.create("spring_testing", false);
    sql = new Db(db);
    sql.exec("CREATE TABLE sent_invoice (invoice_id bigint, attempt int)");
    app = SpringApps.run(db, App.class, "pgtask.worker.auto-startup=false", "pgtask.worker.retry-backoff-base=0s");
    tester = app.getBean(PgTaskWorkerLifecycle.class).tester();
  }

  @AfterAll
  static void stop() {
    if (app != null) {
      app.close();
    }
    db.close();
  }

  @Test
  void withAutoStartupOffTheWorkerStaysStoppedAndNothingRunsInTheBackground() throws Exception {
    PgTaskWorkerLifecycle lifecycle = app.getBean(PgTaskWorkerLifecycle.class);
    assertThat(lifecycle.isRunning()).isFalse();
    assertThat(lifecycle.worker()).isNull();
    long id = app.getBean(PgTask.class).enqueue(new SendInvoice(100, false));
    assertThat(sql.text("SELECT state::text FROM pgtask.task WHERE id = " + id)).isEqualTo("available");
    assertThat(tester.runTask(id).result()).isEqualTo(TaskRun.Result.COMPLETED);
  }

  @Test
  void drainRunsDueTasksInTheTestThreadAndAFailedAttemptsHandlerBeanWritesRollBack() throws Exception {
    long id = app.getBean(PgTask.class).enqueue(new SendInvoice(200, true));
    DrainReport report = tester.drain();
    assertThat(report.ofTask(id)).extracting(TaskRun::attempt, TaskRun::result).containsExactly(
        org.assertj.core.groups.Tuple.tuple(1, TaskRun.Result.RETRY_SCHEDULED),
        org.assertj.core.groups.Tuple.tuple(2, TaskRun.Result.COMPLETED));
    assertThat(SendInvoiceHandler.lastThread).as("the handler bean ran in the test thread").isSameAs(Thread.currentThread());
    assertThat(sql.rows("SELECT attempt::text FROM sent_invoice WHERE invoice_id = 200"))
        .as("the first attempt's JdbcTemplate write rolled back with it; the second committed with the task")
        .isEqualTo(List.of("2"));
  }

  @Test
  void runTaskRunsOneTaskAndLeavesTheOthers() throws Exception {
    PgTask pgTask = app.getBean(PgTask.class);
    long first = pgTask.enqueue(new SendInvoice(300, true));
    long other = pgTask.enqueue(new SendInvoice(301, false));
    TaskRun run = tester.runTask(first);
    assertThat(run.result()).isEqualTo(TaskRun.Result.RETRY_SCHEDULED);
    assertThat(sql.count("SELECT count(*) FROM sent_invoice WHERE invoice_id = 300")).as("rolled back").isZero();
    assertThat(sql.text("SELECT state::text FROM pgtask.task WHERE id = " + other)).isEqualTo("available");
    tester.drain().assertAllCompleted();
  }

  @Test
  void aTesterIsRefusedWhileTheWorkerRunsBecauseItWouldClaimTheSameTasks() {
    PgTaskWorkerLifecycle lifecycle = app.getBean(PgTaskWorkerLifecycle.class);
    lifecycle.start();
    try {
      assertThatThrownBy(lifecycle::tester).isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("pgtask.worker.auto-startup=false");
    } finally {
      lifecycle.stop();
    }
  }
}
