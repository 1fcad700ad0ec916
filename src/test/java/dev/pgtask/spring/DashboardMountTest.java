package dev.pgtask.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgtask.NewTask;
import dev.pgtask.PgTask;
import dev.pgtask.TaskOptions;
import dev.pgtask.dashboard.DashboardAccess;
import dev.pgtask.dashboard.DashboardAction;
import dev.pgtask.testsupport.TestDatabase;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The dashboard mounted in a Spring MVC application (docs/spring-boot.md, docs/dashboard.md), on
 * each Boot line this suite runs (3.5, 4.0, 4.1): off by default (404 under its path), served under
 * {@code pgtask.dashboard.path} when enabled, read-only unless the application's
 * {@link DashboardAccess} bean allows an action, and then only with the session's CSRF token.
 */
class DashboardMountTest {

  static TestDatabase db;
  static final HttpClient HTTP = HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NEVER).build();

  @Configuration(proxyBeanMethods = false)
  @EnableAutoConfiguration
  static class App {}

  @Configuration(proxyBeanMethods = false)
  @EnableAutoConfiguration
  static class RetryOnlyApp {
    @Bean
    DashboardAccess dashboardAccess() {
      return (request, action) -> action == DashboardAction.RETRY_TASK;
    }
  }

  @BeforeAll
  static void database() {
    db = TestDatabase.create("spring_dashboard");
  }

  @AfterAll
  static void drop() {
    db.close();
  }

  static ConfigurableApplicationContext web(Class<?> app, String... properties) {
    List<String> props = new ArrayList<>(SpringApps.datasource(db));
    props.addAll(List.of("server.port=0", "spring.main.banner-mode=off", "pgtask.worker.enabled=false"));
    props.addAll(List.of(properties));
    return new SpringApplicationBuilder(app).web(WebApplicationType.SERVLET).properties(props.toArray(String[]::new))
        .run();
  }

  static HttpResponse<String> get(ConfigurableApplicationContext app, String path) throws Exception {
    return HTTP.send(HttpRequest.newBuilder(uri(app, path)).build(), HttpResponse.BodyHandlers.ofString());
  }

  static URI uri(ConfigurableApplicationContext app, String path) {
    return URI.create("http://127.0.0.1:" + app.getEnvironment().getProperty("local.server.port") + path);
  }

  @Test
  void offByDefault() throws Exception {
    try (ConfigurableApplicationContext app = web(App.class)) {
      assertThat(get(app, "/pgtask/").statusCode()).isEqualTo(404);
      assertThat(get(app, "/pgtask/tasks").statusCode()).isEqualTo(404);
    }
  }

  @Test
  void servedUnderItsPathReadOnlyUnlessTheApplicationsAccessAllowsAndOnlyWithTheToken() throws Exception {
    long id = PgTask.create(db.dataSource()).enqueue(NewTask.of("mount.task", Map.of(), TaskOptions.defaults()));
    try (Db sql = new Db()) {
      sql.exec("UPDATE pgtask.task SET state = 'discarded', finished_at = now(), attempt = 1, max_attempts = 1 "
          + "WHERE id = " + id);
    }
    try (ConfigurableApplicationContext app = web(App.class, "pgtask.dashboard.enabled=true",
        "pgtask.dashboard.path=/ops/pgtask/")) {
      HttpResponse<String> overview = get(app, "/ops/pgtask");
      assertThat(overview.statusCode()).isEqualTo(200);
      assertThat(overview.body()).contains("<h1>Overview</h1>").contains("href=\"/ops/pgtask/tasks\"")
          .contains("read-only");
      HttpResponse<String> task = get(app, "/ops/pgtask/tasks/" + id);
      assertThat(task.statusCode()).isEqualTo(200);
      assertThat(task.body()).doesNotContain("<form method=\"post\"");
      assertThat(HTTP.send(HttpRequest.newBuilder(uri(app, "/ops/pgtask/tasks/" + id + "/retry"))
          .header("Content-Type", "application/x-www-form-urlencoded").POST(HttpRequest.BodyPublishers.ofString(""))
          .build(), HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(403);
    }
    try (ConfigurableApplicationContext app = web(RetryOnlyApp.class, "pgtask.dashboard.enabled=true")) {
      HttpResponse<String> task = get(app, "/pgtask/tasks/" + id);
      assertThat(task.body()).contains("action=\"/pgtask/tasks/" + id + "/retry\"")
          .doesNotContain("action=\"/pgtask/tasks/" + id + "/delete\"");
      String setCookie = task.headers().firstValue("Set-Cookie").orElseThrow();
      assertThat(setCookie).contains("Path=/pgtask").contains("HttpOnly").contains("SameSite=Strict");
      String cookie = setCookie.substring(0, setCookie.indexOf(';'));
      String token = cookie.substring(cookie.indexOf('=') + 1);
      HttpResponse<String> noToken = post(app, "/pgtask/tasks/" + id + "/retry", "", cookie);
      assertThat(noToken.statusCode()).isEqualTo(403);
      HttpResponse<String> delete = post(app, "/pgtask/tasks/" + id + "/delete", "csrf=" + token, cookie);
      assertThat(delete.statusCode()).as("delete is not allowed").isEqualTo(403);
      HttpResponse<String> retry = post(app, "/pgtask/tasks/" + id + "/retry", "csrf=" + token, cookie);
      assertThat(retry.statusCode()).isEqualTo(303);
      assertThat(retry.headers().firstValue("Location")).contains("/pgtask/tasks/" + id + "?done=retried");
      assertThat(PgTask.create(db.dataSource()).find(id).orElseThrow().state()).isIn("available", "scheduled");
    }
  }

  static HttpResponse<String> post(ConfigurableApplicationContext app, String path, String form, String cookie)
      throws Exception {
    return HTTP.send(HttpRequest.newBuilder(uri(app, path)).header("Content-Type", "application/x-www-form-urlencoded")
        .header("Cookie", cookie).POST(HttpRequest.BodyPublishers.ofString(form)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  /** A direct connection for setting up a task's state. */
  static final class Db implements AutoCloseable {
    private final java.sql.Connection c;

    Db() throws java.sql.SQLException {
      c = db.connect();
    }

    void exec(String sql) throws java.sql.SQLException {
      try (var st = c.createStatement()) {
        st.execute(sql);
      }
    }

    @Override
    public void close() throws java.sql.SQLException {
      c.close();
    }
  }
}
