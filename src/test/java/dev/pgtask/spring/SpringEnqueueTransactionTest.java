package dev.pgtask.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgtask.NewTask;
import dev.pgtask.PgTask;
import dev.pgtask.TaskArgs;
import dev.pgtask.TaskKind;
import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.TestDatabase;
import java.util.List;
import javax.sql.DataSource;
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
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.support.JdbcTransactionManager;
import org.springframework.stereotype.Service;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The auto-configured PgTask's plain {@code enqueue(...)} joins the Spring-managed transaction of the
 * caller (Boot's JdbcTransactionManager behind {@code @Transactional}, a DataSourceTransactionManager,
 * jOOQ's Spring transactions through Boot's DSLContext), and commits on its own without one.
 */
class SpringEnqueueTransactionTest {

  @TaskKind("spring.enqueue")
  record Note(String text) implements TaskArgs {}

  @Service
  public static class Notes {
    private final JdbcTemplate jdbc;
    private final PgTask pgTask;

    public Notes(JdbcTemplate jdbc, PgTask pgTask) {
      this.jdbc = jdbc;
      this.pgTask = pgTask;
    }

    @Transactional
    public void writeAndEnqueue(String text, boolean fail) {
      jdbc.update("INSERT INTO note (text) VALUES (?)", text);
      pgTask.enqueue(new Note(text));
      if (fail) {
        throw new IllegalStateException("business rule failed after the enqueue");
      }
    }

    @Transactional
    public void enqueueAndCount(String text, DataSource other, long[] seenOutside) throws Exception {
      pgTask.enqueue(new Note(text));
      seenOutside[0] = new JdbcTemplate(other).queryForObject(
          "SELECT count(*) FROM pgtask.task WHERE payload->>'text' = ?", Long.class, text);
    }
  }

  @Configuration(proxyBeanMethods = false)
  @EnableAutoConfiguration
  @Import(Notes.class)
  static class App {}

  static TestDatabase db;
  static Db sql;
  static ConfigurableApplicationContext app;

  @BeforeAll
  static void start() throws Exception {
    db = TestDatabase.create("spring_enqueue", false);
    sql = new Db(db);
    sql.exec("CREATE TABLE note (text text)");
    app = SpringApps.run(db, App.class, "pgtask.worker.enabled=false");
  }

  @AfterAll
  static void stop() {
    if (app != null) {
      app.close();
    }
    db.close();
  }

  private static long tasks(String text) throws Exception {
    return sql.count("SELECT count(*) FROM pgtask.task WHERE payload->>'text' = '" + text + "'");
  }

  private static long notes(String text) throws Exception {
    return sql.count("SELECT count(*) FROM note WHERE text = '" + text + "'");
  }

  @Test
  void anEnqueueInsideATransactionalMethodRollsBackWithTheBusinessRows() throws Exception {
    assertThat(app.getBean(PlatformTransactionManager.class)).isInstanceOf(JdbcTransactionManager.class);
    assertThatThrownBy(() -> app.getBean(Notes.class).writeAndEnqueue("rolled-back", true))
        .isInstanceOf(IllegalStateException.class);
    assertThat(notes("rolled-back")).isZero();
    assertThat(tasks("rolled-back")).as("the task rolled back with the business rows").isZero();

    app.getBean(Notes.class).writeAndEnqueue("committed", false);
    assertThat(notes("committed")).isEqualTo(1);
    assertThat(tasks("committed")).isEqualTo(1);
  }

  @Test
  void anEnqueueInsideATransactionIsInvisibleToOthersUntilItCommits() throws Exception {
    long[] seenOutside = {-1};
    app.getBean(Notes.class).enqueueAndCount("invisible", db.dataSource(), seenOutside);
    assertThat(seenOutside[0]).as("seen from another connection before the commit").isZero();
    assertThat(tasks("invisible")).isEqualTo(1);
  }

  @Test
  void anEnqueueJoinsADataSourceTransactionManagersTransaction() throws Exception {
    DataSource ds = app.getBean(DataSource.class);
    PgTask pgTask = app.getBean(PgTask.class);
    TransactionTemplate tx = new TransactionTemplate(new DataSourceTransactionManager(ds));
    assertThatThrownBy(() -> tx.executeWithoutResult(s -> {
      new JdbcTemplate(ds).update("INSERT INTO note (text) VALUES ('dstm')");
      pgTask.enqueue(new Note("dstm"));
      throw new IllegalStateException("roll back");
    })).isInstanceOf(IllegalStateException.class);
    assertThat(notes("dstm")).isZero();
    assertThat(tasks("dstm")).isZero();

    tx.executeWithoutResult(s -> {
      pgTask.enqueue(new Note("dstm-rollback-only"));
      s.setRollbackOnly();
    });
    assertThat(tasks("dstm-rollback-only")).isZero();
  }

  @Test
  void anEnqueueJoinsAJooqTransactionOfBootsDslContext() throws Exception {
    DSLContext dsl = app.getBean(DSLContext.class);
    PgTask pgTask = app.getBean(PgTask.class);
    assertThatThrownBy(() -> dsl.transaction(cfg -> {
      cfg.dsl().insertInto(DSL.table("note"), DSL.field("text")).values("jooq").execute();
      pgTask.enqueue(new Note("jooq"));
      throw new IllegalStateException("roll back");
    })).isInstanceOf(IllegalStateException.class);
    assertThat(notes("jooq")).isZero();
    assertThat(tasks("jooq")).isZero();

    dsl.transaction(cfg -> {
      cfg.dsl().insertInto(DSL.table("note"), DSL.field("text")).values("jooq-ok").execute();
      pgTask.enqueue(new Note("jooq-ok"));
    });
    assertThat(notes("jooq-ok")).isEqualTo(1);
    assertThat(tasks("jooq-ok")).isEqualTo(1);
  }

  @Test
  void aBatchEnqueueJoinsTheTransactionToo() throws Exception {
    PgTask pgTask = app.getBean(PgTask.class);
    TransactionTemplate tx = new TransactionTemplate(app.getBean(PlatformTransactionManager.class));
    tx.executeWithoutResult(s -> {
      pgTask.enqueueAll(List.of(NewTask.of(new Note("batch")), NewTask.of(new Note("batch"))));
      s.setRollbackOnly();
    });
    assertThat(tasks("batch")).isZero();
  }

  @Test
  void anEnqueueWithoutATransactionCommitsOnItsOwn() throws Exception {
    app.getBean(PgTask.class).enqueue(new Note("alone"));
    assertThat(tasks("alone")).isEqualTo(1);
  }
}
