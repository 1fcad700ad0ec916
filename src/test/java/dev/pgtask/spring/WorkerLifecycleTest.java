package dev.pgtask.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.PgTask;
import dev.pgtask.TaskArgs;
import dev.pgtask.TaskContext;
import dev.pgtask.TaskKind;
import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.TestDatabase;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
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
 * The worker as a Spring lifecycle bean: with Boot's default pool (10) and the default concurrency
 * (10) it runs ten tasks at once on its own pool while the application's pool stays free; it stops
 * within pgtask.worker.shutdown-timeout, releasing what still runs; an application without handler
 * beans runs none; settings that cannot work fail at startup naming the property.
 */
class WorkerLifecycleTest {

  @TaskKind("spring.block")
  record Block(int n) implements TaskArgs {}

  static final AtomicInteger running = new AtomicInteger();
  static final AtomicInteger maxRunning = new AtomicInteger();
  static volatile CountDownLatch release = new CountDownLatch(1);

  @Component
  public static class BlockHandler implements PgTaskHandler<Block> {
    @Override
    public void handle(TaskContext ctx, Block b) throws Exception {
      maxRunning.accumulateAndGet(running.incrementAndGet(), Math::max);
      try {
        release.await(); // interrupted on shutdown
      } finally {
        running.decrementAndGet();
      }
    }
  }

  @Configuration(proxyBeanMethods = false)
  @EnableAutoConfiguration
  @Import(BlockHandler.class)
  static class App {}

  @Configuration(proxyBeanMethods = false)
  @EnableAutoConfiguration
  static class ProducerOnlyApp {}

  static TestDatabase db;
  static Db sql;

  @BeforeAll
  static void create() {
    db = TestDatabase.create("spring_lifecycle");
    sql = new Db(db);
  }

  @AfterAll
  static void drop() {
    db.close();
  }

  @Test
  void bootsDefaultPoolAndTheDefaultConcurrencyRunTenTasksAtOnceOnTheWorkersOwnPool() throws Exception {
    release = new CountDownLatch(1);
    maxRunning.set(0);
    try (ConfigurableApplicationContext app = SpringApps.run(db, App.class)) {
      DataSource appPool = app.getBean(DataSource.class);
      assertThat(((HikariDataSource) appPool).getMaximumPoolSize()).isEqualTo(10);
      PgTask pgTask = app.getBean(PgTask.class);
      for (int i = 0; i < 10; i++) {
        pgTask.enqueue(new Block(i));
      }
      await().atMost(Duration.ofSeconds(60)).until(() -> running.get() == 10);
      // ten tasks hold ten transactions, none of them on the application's pool
      assertThat(new JdbcTemplate(appPool).queryForObject("SELECT 1", Integer.class)).isEqualTo(1);
      assertThat(((HikariDataSource) appPool).getHikariPoolMXBean().getActiveConnections()).isZero();
      release.countDown();
      await().atMost(Duration.ofSeconds(60)).until(() ->
          sql.count("SELECT count(*) FROM pgtask.task WHERE state = 'completed'") == 10);
      assertThat(maxRunning.get()).isEqualTo(10);
    }
    sql.exec("DELETE FROM pgtask.task");
  }

  @Test
  void closingTheContextStopsWithinTheShutdownTimeoutAndReleasesTheRunningTask() throws Exception {
    release = new CountDownLatch(1);
    ConfigurableApplicationContext app = SpringApps.run(db, App.class, "pgtask.worker.shutdown-timeout=2s");
    long id = app.getBean(PgTask.class).enqueue(new Block(1));
    await().atMost(Duration.ofSeconds(60)).until(() -> running.get() == 1);
    long started = System.nanoTime();
    app.close();
    long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
    assertThat(tookMillis).as("close took %d ms", tookMillis).isLessThan(2_000 + 8_000).isGreaterThanOrEqualTo(1_900);
    assertThat(sql.text("SELECT state::text || ' ' || attempt FROM pgtask.task WHERE id = " + id))
        .as("released with its attempt given back").isEqualTo("available 0");
    assertThat(sql.count("SELECT count(*) FROM pgtask.workers")).isZero();
    sql.exec("DELETE FROM pgtask.task");
  }

  @Test
  void anApplicationWithoutHandlerBeansRunsNoWorker() throws Exception {
    try (ConfigurableApplicationContext app = SpringApps.run(db, ProducerOnlyApp.class)) {
      assertThat(app.getBean(PgTaskWorkerLifecycle.class).isRunning()).isFalse();
      assertThat(sql.count("SELECT count(*) FROM pgtask.workers")).isZero();
    }
    try (ConfigurableApplicationContext app = SpringApps.run(db, App.class, "pgtask.worker.enabled=false")) {
      assertThat(app.getBeansOfType(PgTaskWorkerLifecycle.class)).isEmpty();
      assertThat(app.getBean(PgTask.class)).isNotNull();
    }
  }

  @Test
  void theApplicationsPoolTooSmallForTheConcurrencyFailsAtStartupNamingTheProperties() {
    assertThatThrownBy(() -> SpringApps.run(db, App.class, "pgtask.worker.own-pool=false").close())
        .rootCause().hasMessageContaining("the connection pool has 10 connections; concurrency 10 needs at least 11")
        .hasMessageContaining("spring.datasource.hikari.maximum-pool-size").hasMessageContaining("pgtask.worker.concurrency");
    assertThatThrownBy(() -> SpringApps.run(db, App.class, "pgtask.worker.pool-size=4").close())
        .rootCause().hasMessageContaining("needs at least 11").hasMessageContaining("pgtask.worker.pool-size");
  }

  @Test
  void aShutdownTimeoutThatDoesNotFitSpringsShutdownPhaseFailsAtStartup() {
    assertThatThrownBy(() -> SpringApps.run(db, App.class, "pgtask.worker.shutdown-timeout=30s").close())
        .rootCause().hasMessageContaining("pgtask.worker.shutdown-timeout (PT30S)")
        .hasMessageContaining("spring.lifecycle.timeout-per-shutdown-phase (PT30S)");
  }
}
