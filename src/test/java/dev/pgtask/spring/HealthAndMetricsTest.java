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
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.actuate.health.Health;
import org.springframework.boot.actuate.health.HealthEndpoint;
import org.springframework.boot.actuate.health.Status;
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

  @SuppressWarnings("unchecked")
  private static Health pgtaskHealth() {
    return (Health) app.getBean(HealthEndpoint.class).healthForPath("pgtask");
  }

  @Test
  void theIndicatorReportsTheListenerTheLastClaimAndTasksNoLiveWorkerHandles() {
    PgTask pgTask = app.getBean(PgTask.class);
    pgTask.enqueue(NewTask.of("spring.nobody", "{}"));
    await().atMost(Duration.ofSeconds(30)).until(() -> {
      Health h = pgtaskHealth();
      Map<String, Object> w = (Map<String, Object>) h.getDetails().get("worker");
      return w != null && Boolean.TRUE.equals(w.get("listening")) && w.get("lastClaimAt") != null
          && Long.valueOf(1).equals(h.getDetails().get("unhandledTasks"));
    });
    Health h = pgtaskHealth();
    assertThat(h.getStatus()).isEqualTo(Status.UP);
    assertThat(h.getDetails()).containsKeys("oldestDueLagSeconds", "notificationQueueUsage", "unservedTasks", "tenantsStuck");
    assertThat((List<Map<String, Object>>) h.getDetails().get("unrunnable"))
        .anySatisfy(u -> assertThat(u).containsEntry("kind", "spring.nobody").containsEntry("reason", "unhandled_kind"));
    assertThat((List<String>) h.getDetails().get("warnings")).anySatisfy(s -> assertThat(s).contains("no live worker"));
    assertThat((double) h.getDetails().get("notificationQueueUsage")).isBetween(0.0, 1.0);
  }

  @Test
  void theIndicatorIsDownWhenTheDatabaseCannotBeQueried() {
    org.postgresql.ds.PGSimpleDataSource nowhere = new org.postgresql.ds.PGSimpleDataSource();
    nowhere.setURL(db.url().replaceFirst("/[^/?]+(\\?|$)", "/pgtask_no_such_database$1"));
    nowhere.setUser(db.user());
    Health h = new PgTaskHealthIndicator(nowhere, null, new PgTaskProperties()).health();
    assertThat(h.getStatus()).isEqualTo(Status.DOWN);
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
