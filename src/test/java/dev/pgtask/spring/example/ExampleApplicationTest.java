package dev.pgtask.spring.example;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.pgtask.testing.EnqueuedTasks;
import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.TestDatabase;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import javax.sql.DataSource;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The example application, started as a user would start it (web server, actuator, its own Flyway
 * migrations) against the real database, and used through its service and its health endpoint.
 */
class ExampleApplicationTest {

  static TestDatabase db;
  static ConfigurableApplicationContext app;
  static Db sql;

  @BeforeAll
  static void start() {
    db = TestDatabase.create("spring_example", false);
    sql = new Db(db);
    app = new SpringApplicationBuilder(ExampleApplication.class).properties(
        "spring.datasource.url=" + db.url(), "spring.datasource.username=" + db.user(),
        "spring.datasource.password=" + (db.password() == null ? "" : db.password()),
        "server.port=0", "spring.main.banner-mode=off").run();
  }

  @AfterAll
  static void stop() {
    if (app != null) {
      app.close();
    }
    db.close();
  }

  @Test
  void aPlacedOrderIsConfirmedByTheHandlerBean() throws Exception {
    long orderId = app.getBean(OrderService.class).placeOrder("ada@example.com", 1200);
    // the order's task, enqueued in the order's transaction (dev.pgtask.testing, as a user's test would)
    EnqueuedTasks.in(app.getBean(DataSource.class)).ofKind("order.confirmation")
        .withPayload(SendConfirmation.class, p -> p.orderId() == orderId).assertSingle();
    await().atMost(Duration.ofSeconds(30)).until(() ->
        sql.count("SELECT count(*) FROM confirmations WHERE order_id = " + orderId) == 1);
    assertThat(sql.text("SELECT recipient FROM confirmations WHERE order_id = " + orderId)).isEqualTo("ada@example.com");
    assertThat(sql.text("SELECT state::text FROM pgtask.task WHERE kind = 'order.confirmation' AND payload->>'orderId' = '"
        + orderId + "'")).isEqualTo("completed");
  }

  @Test
  void aFailedOrderLeavesNeitherTheOrderNorItsTask() throws Exception {
    long tasksBefore = sql.count("SELECT count(*) FROM pgtask.tasks");
    int confirmationsBefore = EnqueuedTasks.in(app.getBean(DataSource.class)).ofKind("order.confirmation").count();
    assertThatThrownBy(() -> app.getBean(OrderService.class).placeOrder("bob@example.com", 0))
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(sql.count("SELECT count(*) FROM orders WHERE customer = 'bob@example.com'")).isZero();
    EnqueuedTasks.in(app.getBean(DataSource.class)).ofKind("order.confirmation").assertCount(confirmationsBefore);
    assertThat(sql.count("SELECT count(*) FROM pgtask.tasks")).isEqualTo(tasksBefore);
  }

  @Test
  void theHealthEndpointReportsTheWorkerAndTheQueue() throws Exception {
    String port = app.getEnvironment().getProperty("local.server.port");
    HttpClient http = HttpClient.newHttpClient();
    HttpRequest get = HttpRequest.newBuilder(URI.create("http://localhost:" + port + "/actuator/health/pgtask")).build();
    await().atMost(Duration.ofSeconds(20)).until(() -> http.send(get, HttpResponse.BodyHandlers.ofString()).body()
        .contains("\"listening\":true"));
    HttpResponse<String> r = http.send(get, HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.body()).contains("\"status\":\"UP\"", "\"lastClaimAt\":", "\"oldestDueLagSeconds\":",
        "\"unservedTasks\":0", "\"notificationQueueUsage\":", "\"kinds\":[\"order.confirmation\"]");
  }
}
