package dev.pgtask.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pgtask.HandlerOptions;
import dev.pgtask.PgTask;
import dev.pgtask.TaskArgs;
import dev.pgtask.TaskContext;
import dev.pgtask.TaskKind;
import dev.pgtask.TaskOptions;
import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.TestDatabase;
import java.time.Duration;
import org.jooq.DSLContext;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/**
 * Handler beans are found at startup, get their kind from the payload record, and run inside the
 * task's transaction: what they write through the application's JdbcTemplate, Boot's DSLContext, a
 * {@code @Transactional} service or PgTask's own enqueue commits with the task, and a failed
 * attempt leaves none of it.
 */
class HandlerBeansTest {

  /** Writes a row, then fails on the first attempt when asked to. */
  @TaskKind("spring.jdbc")
  record JdbcWrite(String label, boolean failFirst) implements TaskArgs {}

  @TaskKind("spring.jooq")
  record JooqWrite(String label, boolean failFirst) implements TaskArgs {}

  @TaskKind("spring.service")
  record ServiceWrite(String label, boolean failFirst, boolean serviceFails) implements TaskArgs {}

  @TaskKind("spring.followup")
  record FollowUp(String label) implements TaskArgs {}

  @TaskKind("spring.followup.child")
  record Child(String label, int parentAttempt) implements TaskArgs {}

  static void failOnFirst(TaskContext ctx, boolean failFirst) {
    if (failFirst && ctx.attempt() == 1) {
      throw new IllegalStateException("first attempt fails after its write");
    }
  }

  @Component
  public static class JdbcHandler implements PgTaskHandler<JdbcWrite> {
    private final JdbcTemplate jdbc;

    public JdbcHandler(JdbcTemplate jdbc) {
      this.jdbc = jdbc;
    }

    @Override
    public void handle(TaskContext ctx, JdbcWrite w) {
      jdbc.update("INSERT INTO written (label, attempt, via) VALUES (?, ?, 'jdbc')", w.label(), ctx.attempt());
      failOnFirst(ctx, w.failFirst());
    }
  }

  @Component
  public static class JooqHandler implements PgTaskHandler<JooqWrite> {
    private final DSLContext dsl;

    public JooqHandler(DSLContext dsl) {
      this.dsl = dsl;
    }

    @Override
    public void handle(TaskContext ctx, JooqWrite w) {
      dsl.insertInto(DSL.table("written"), DSL.field("label"), DSL.field("attempt"), DSL.field("via"))
          .values(w.label(), ctx.attempt(), "jooq").execute();
      failOnFirst(ctx, w.failFirst());
    }
  }

  @Service
  public static class Ledger {
    private final JdbcTemplate jdbc;

    public Ledger(JdbcTemplate jdbc) {
      this.jdbc = jdbc;
    }

    @Transactional
    public void record(String label, int attempt, boolean fail) {
      jdbc.update("INSERT INTO written (label, attempt, via) VALUES (?, ?, 'service')", label, attempt);
      if (fail) {
        throw new IllegalStateException("the service's own rule failed");
      }
    }
  }

  @Component
  public static class ServiceHandler implements PgTaskHandler<ServiceWrite> {
    private final Ledger ledger;

    public ServiceHandler(Ledger ledger) {
      this.ledger = ledger;
    }

    @Override
    public void handle(TaskContext ctx, ServiceWrite w) {
      try {
        ledger.record(w.label(), ctx.attempt(), w.serviceFails());
      } catch (IllegalStateException swallowed) {
        // the handler carries on: the participating transaction is rollback-only all the same
      }
      failOnFirst(ctx, w.failFirst());
    }

    @Override
    public HandlerOptions options() {
      return HandlerOptions.defaults().withTimeout(Duration.ofSeconds(30));
    }
  }

  @Component
  public static class FollowUpHandler implements PgTaskHandler<FollowUp> {
    private final PgTask pgTask;

    public FollowUpHandler(PgTask pgTask) {
      this.pgTask = pgTask;
    }

    @Override
    public void handle(TaskContext ctx, FollowUp f) {
      pgTask.enqueue(new Child(f.label(), ctx.attempt()), TaskOptions.defaults().withQueue("children"));
      failOnFirst(ctx, true);
    }
  }

  @Configuration(proxyBeanMethods = false)
  @EnableAutoConfiguration
  @Import({JdbcHandler.class, JooqHandler.class, Ledger.class, ServiceHandler.class, FollowUpHandler.class})
  static class App {}

  static TestDatabase db;
  static Db sql;
  static ConfigurableApplicationContext app;

  @BeforeAll
  static void start() throws Exception {
    db = TestDatabase.create("spring_handlers", false);
    sql = new Db(db);
    sql.exec("CREATE TABLE written (label text, attempt int, via text)");
    app = SpringApps.run(db, App.class, "pgtask.worker.retry-backoff-base=0s", "pgtask.worker.concurrency=3");
  }

  @AfterAll
  static void stop() {
    if (app != null) {
      app.close();
    }
    db.close();
  }

  private static String finalState(long id) throws Exception {
    await().atMost(Duration.ofSeconds(60)).until(() -> !sql.text(
        "SELECT state::text FROM pgtask.task WHERE id = " + id).matches("available|running|retryable"));
    return sql.text("SELECT state::text FROM pgtask.task WHERE id = " + id);
  }

  private static java.util.List<String> written(String label) throws Exception {
    return sql.rows("SELECT via || ' ' || attempt FROM written WHERE label = '" + label + "' ORDER BY attempt");
  }

  @Test
  void theWorkerRunsTheHandlerBeansKindsFromTheirPayloadRecords() {
    assertThat(app.getBean(PgTaskWorkerLifecycle.class).kinds())
        .containsExactlyInAnyOrder("spring.jdbc", "spring.jooq", "spring.service", "spring.followup");
  }

  @Test
  void jdbcTemplateWritesCommitWithTheTaskAndAFailedAttemptsRowsRollBack() throws Exception {
    long id = app.getBean(PgTask.class).enqueue(new JdbcWrite("jdbc", true));
    assertThat(finalState(id)).isEqualTo("completed");
    assertThat(written("jdbc")).containsExactly("jdbc 2");
  }

  @Test
  void jooqDslContextWritesCommitWithTheTaskAndAFailedAttemptsRowsRollBack() throws Exception {
    long id = app.getBean(PgTask.class).enqueue(new JooqWrite("jooq", true));
    assertThat(finalState(id)).isEqualTo("completed");
    assertThat(written("jooq")).containsExactly("jooq 2");
  }

  @Test
  void aTransactionalServiceJoinsTheTasksTransaction() throws Exception {
    long id = app.getBean(PgTask.class).enqueue(new ServiceWrite("service", true, false));
    assertThat(finalState(id)).isEqualTo("completed");
    assertThat(written("service")).containsExactly("service 2");
  }

  @Test
  void aFailedTransactionalServiceFailsTheAttemptEvenWhenTheHandlerSwallowsIt() throws Exception {
    long id = app.getBean(PgTask.class).enqueue(new ServiceWrite("swallowed", false, true),
        TaskOptions.defaults().withMaxAttempts(1));
    assertThat(finalState(id)).isEqualTo("discarded");
    assertThat(written("swallowed")).isEmpty();
    assertThat(sql.text("SELECT errors -> -1 ->> 'error' FROM pgtask.task WHERE id = " + id)).contains("rollback-only");
  }

  @Test
  void anEnqueueInsideAHandlerJoinsTheTasksTransaction() throws Exception {
    long id = app.getBean(PgTask.class).enqueue(new FollowUp("child"));
    assertThat(finalState(id)).isEqualTo("completed");
    // attempt 1 enqueued a child and failed: that child rolled back with it; attempt 2's committed
    assertThat(sql.rows("SELECT payload->>'parentAttempt' FROM pgtask.task WHERE kind = 'spring.followup.child'"))
        .containsExactly("2");
  }
}
