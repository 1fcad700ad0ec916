package dev.pgtask.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pgtask.NewTask;
import dev.pgtask.PgTask;
import dev.pgtask.TaskArgs;
import dev.pgtask.TaskContext;
import dev.pgtask.TaskKind;
import dev.pgtask.testsupport.TestDatabase;
import io.micrometer.core.instrument.MeterRegistry;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootVersion;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.stereotype.Component;

/** The pgtask health indicator and the Micrometer meters, in an application with the actuator. */
class HealthAndMetricsTest {

  @TaskKind("spring.health")
  record Ping(int n) implements TaskArgs {}

  @Component
  public static class PingHandler implements PgTaskHandler<Ping> {
    @Override
    public void handle(TaskContext ctx, Ping p) {}
  }

  @Configuration(proxyBeanMethods = false)
  @EnableAutoConfiguration
  @Import(PingHandler.class)
  static class App {}

  static TestDatabase db;
  static ConfigurableApplicationContext app;

  @BeforeAll
  static void start() {
    db = TestDatabase.create("spring_health", false);
    app = SpringApps.run(db, App.class, "management.endpoint.health.show-details=always");
  }

  @AfterAll
  static void stop() {
    if (app != null) {
      app.close();
    }
    db.close();
  }

  /** The {@code pgtask} contributor as the running Boot line's health endpoint reports it. */
  private static LineHealth pgtaskHealth() {
    return LineHealth.of(app, "pgtask");
  }

  @Test
  void theIndicatorOfTheRunningBootLineIsRegistered() {
    Object indicator = app.getBean("pgtaskHealthIndicator");
    Class<?> expected = SpringBootVersion.getVersion().startsWith("3.") ? PgTaskHealthIndicator.class
        : PgTaskBoot4HealthIndicator.class;
    assertThat(indicator).as("Spring Boot " + SpringBootVersion.getVersion()).isInstanceOf(expected);
  }

  @Test
  void theIndicatorReportsTheListenerTheLastClaimAndTasksNoLiveWorkerHandles() {
    PgTask pgTask = app.getBean(PgTask.class);
    pgTask.enqueue(NewTask.of("spring.nobody", "{}"));
    await().atMost(Duration.ofSeconds(30)).until(() -> {
      LineHealth h = pgtaskHealth();
      Map<String, Object> w = (Map<String, Object>) h.details().get("worker");
      return w != null && Boolean.TRUE.equals(w.get("listening")) && w.get("lastClaimAt") != null
          && Long.valueOf(1).equals(h.details().get("unhandledTasks"));
    });
    LineHealth h = pgtaskHealth();
    assertThat(h.status()).isEqualTo("UP");
    assertThat(h.details()).containsKeys("oldestDueLagSeconds", "notificationQueueUsage", "unservedTasks", "tenantsStuck");
    assertThat((List<Map<String, Object>>) h.details().get("unrunnable"))
        .anySatisfy(u -> assertThat(u).containsEntry("kind", "spring.nobody").containsEntry("reason", "unhandled_kind"));
    assertThat((List<String>) h.details().get("warnings")).anySatisfy(s -> assertThat(s).contains("no live worker"));
    assertThat((double) h.details().get("notificationQueueUsage")).isBetween(0.0, 1.0);
  }

  @Test
  void theIndicatorWarnsOfALimitHoldingMoreSlotsThanItsMaxRunning() throws Exception {
    try (Connection c = db.connect(); Statement st = c.createStatement()) {
      st.execute("SELECT pgtask.set_limit('kind', 'spring.over', max_running => 1)");
      assertThat(pgtaskHealth().details()).containsEntry("limitsOver", 0L).containsKey("limitsStuck");
      c.setAutoCommit(false);
      // two locks in the kind's slot range, as an application misusing pgtask's classids would take
      st.execute("SELECT pg_advisory_xact_lock(pgtask.slot_class(s.lock_namespace, 1024 + i), l.id) "
          + "FROM pgtask.settings s, pgtask.flow_limit l, generate_series(0, 1) i WHERE l.key = 'spring.over'");
      LineHealth h = pgtaskHealth();
      assertThat(h.status()).isEqualTo("UP");
      assertThat(h.details()).containsEntry("limitsOver", 1L);
      assertThat((List<String>) h.details().get("warnings"))
          .anySatisfy(s -> assertThat(s).startsWith("1 limit(s) hold more slots than their max_running"));
      c.rollback();
      c.setAutoCommit(true);
      st.execute("SELECT pgtask.clear_limit('kind', 'spring.over')");
    }
  }

  @Test
  void theIndicatorIsDownWhenTheDatabaseCannotBeQueried() throws Exception {
    org.postgresql.ds.PGSimpleDataSource nowhere = new org.postgresql.ds.PGSimpleDataSource();
    nowhere.setURL(db.url().replaceFirst("/[^/?]+(\\?|$)", "/pgtask_no_such_database$1"));
    nowhere.setUser(db.user());
    // the running line's indicator class, over a data source that cannot connect
    Class<?> line = app.getBean("pgtaskHealthIndicator").getClass();
    var constructor = line.getDeclaredConstructor(javax.sql.DataSource.class, PgTaskWorkerLifecycle.class,
        PgTaskProperties.class);
    Object indicator = constructor.newInstance(nowhere, null, new PgTaskProperties());
    assertThat(LineHealth.of(line.getMethod("health").invoke(indicator)).status()).isEqualTo("DOWN");
  }

  @Test
  void micrometerMetersAreRegisteredWithoutAnyWiring() {
    MeterRegistry registry = app.getBean(MeterRegistry.class);
    app.getBean(PgTask.class).enqueue(new Ping(1));
    assertThat(registry.find("pgtask.tasks.enqueued").tag("queue", "default").counter()).isNotNull();
    await().atMost(Duration.ofSeconds(30)).until(() -> registry.find("pgtask.tasks.finished")
        .tags("kind", "spring.health", "outcome", "completed").timer() != null);
  }
}
