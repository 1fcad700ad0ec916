package dev.pgtask.spring.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.pgtask.NewTask;
import dev.pgtask.PgTask;
import dev.pgtask.TaskOptions;
import dev.pgtask.testsupport.TestDatabase;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.Statement;
import java.util.Base64;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.util.ClassUtils;

/**
 * The dashboard mounted in a Spring Boot application that Spring Security guards (docs/dashboard.md,
 * "Behind Spring Security"; {@link SecuredDashboardApp} is the docs' snippet): the application's
 * security chain runs before the dashboard, so an unauthenticated request is refused 401 and a user
 * without the path's role 403; an authenticated user reads the pages; an action's POST through the
 * mount still needs the dashboard's own CSRF token (Spring's CSRF filter exempted from the path, as
 * the docs say, and without that exemption Spring refuses the dashboard's forms); and a
 * {@code DashboardAccess} that reads the authenticated principal decides who acts: an ADMIN's retry
 * goes through, a plain user's is refused and changes nothing.
 *
 * <p>Runs in the {@code spring-security} test run only (pom.xml), the one with Spring Security on
 * its classpath: with it there, Boot's security auto-configuration would lock every other Spring
 * test's web application. Elsewhere (a run of chosen tests' default run) it is skipped.
 */
class DashboardSecurityMountTest {

  static final String PASSWORD = "s3cret-for-tests";

  static final HttpClient HTTP = HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NEVER).build();

  static TestDatabase db;

  static final boolean SPRING_SECURITY =
      ClassUtils.isPresent("org.springframework.security.web.SecurityFilterChain", null);

  @BeforeAll
  static void database() {
    if (!SPRING_SECURITY && Boolean.getBoolean("pgtask.test.springSecurity")) {
      throw new IllegalStateException("the spring-security test run has no Spring Security on its classpath: see pom.xml");
    }
    if (SPRING_SECURITY) {
      db = TestDatabase.create("spring_security_dashboard");
    }
  }

  @BeforeEach
  void springSecurityPresent() {
    assumeTrue(SPRING_SECURITY, "Spring Security is not on this run's classpath: the spring-security test run runs this class");
  }

  @AfterAll
  static void drop() {
    if (db != null) {
      db.close();
    }
  }

  static ConfigurableApplicationContext web(Class<?> app) {
    return new SpringApplicationBuilder(app).web(WebApplicationType.SERVLET).properties(
        "spring.datasource.url=" + db.url(), "spring.datasource.username=" + db.user(),
        "spring.datasource.password=" + (db.password() == null ? "" : db.password()),
        "server.port=0", "spring.main.banner-mode=off", "pgtask.worker.enabled=false",
        "pgtask.dashboard.enabled=true", "pgtask.dashboard.path=/ops/pgtask").run();
  }

  static HttpRequest.Builder request(ConfigurableApplicationContext app, String path, String user) {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
        + app.getEnvironment().getProperty("local.server.port") + path));
    if (user != null) {
      b.header("Authorization", "Basic " + Base64.getEncoder().encodeToString((user + ":" + PASSWORD)
          .getBytes(StandardCharsets.UTF_8)));
    }
    return b;
  }

  static HttpResponse<String> get(ConfigurableApplicationContext app, String path, String user) throws Exception {
    return HTTP.send(request(app, path, user).build(), HttpResponse.BodyHandlers.ofString());
  }

  static HttpResponse<String> post(ConfigurableApplicationContext app, String path, String user, String form,
      String cookie) throws Exception {
    HttpRequest.Builder b = request(app, path, user).header("Content-Type", "application/x-www-form-urlencoded")
        .POST(HttpRequest.BodyPublishers.ofString(form));
    if (cookie != null) {
      b.header("Cookie", cookie);
    }
    return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  /** The dashboard's CSRF cookie ({@code pgtask_csrf=...}) a page set. */
  static String cookie(HttpResponse<String> page) {
    String set = page.headers().allValues("Set-Cookie").stream().filter(c -> c.startsWith("pgtask_csrf="))
        .findFirst().orElseThrow(() -> new AssertionError("no pgtask_csrf cookie: " + page.headers().map()));
    return set.substring(0, set.indexOf(';'));
  }

  static String token(String cookie) {
    return cookie.substring(cookie.indexOf('=') + 1);
  }

  static long discardedTask() throws Exception {
    long id = PgTask.create(db.dataSource()).enqueue(NewTask.of("secured.task", Map.of(), TaskOptions.defaults()));
    try (Connection c = db.connect(); Statement st = c.createStatement()) {
      st.execute("UPDATE pgtask.task SET state = 'discarded', finished_at = now(), attempt = 1, max_attempts = 1 "
          + "WHERE id = " + id);
    }
    return id;
  }

  static String state(long id) {
    return PgTask.create(db.dataSource()).find(id).orElseThrow().state();
  }

  @Test
  void theApplicationsSecurityGuardsTheMountTheDashboardsTokenStillGuardsItsActionsAndThePrincipalDecidesWhoActs()
      throws Exception {
    long id = discardedTask();
    try (ConfigurableApplicationContext app = web(SecuredDashboardApp.class)) {
      // (a) nobody authenticated: refused by the application's chain before the dashboard
      HttpResponse<String> anonymous = get(app, "/ops/pgtask", null);
      assertThat(anonymous.statusCode()).as("unauthenticated GET").isEqualTo(401);
      assertThat(anonymous.headers().firstValue("WWW-Authenticate")).hasValueSatisfying(h -> assertThat(h).startsWith("Basic"));
      assertThat(anonymous.body()).doesNotContain("Overview");
      assertThat(post(app, "/ops/pgtask/tasks/" + id + "/retry", null, "", null).statusCode()).as("unauthenticated POST")
          .isEqualTo(401);
      assertThat(get(app, "/ops/pgtask/tasks", "guest").statusCode()).as("authenticated, without the role OPS")
          .isEqualTo(403);

      // (b) authenticated with the path's role: the overview, read-only for a plain user
      HttpResponse<String> overview = get(app, "/ops/pgtask", "viewer");
      assertThat(overview.statusCode()).isEqualTo(200);
      assertThat(overview.body()).contains("<h1>Overview</h1>").contains("href=\"/ops/pgtask/tasks\"")
          .contains("read-only");
      HttpResponse<String> viewersTask = get(app, "/ops/pgtask/tasks/" + id, "viewer");
      assertThat(viewersTask.body()).as("no action form for a plain user").doesNotContain("<form method=\"post\"");

      // (c) an ADMIN's page offers the retry; its POST through the mount needs the dashboard's token
      HttpResponse<String> adminsTask = get(app, "/ops/pgtask/tasks/" + id, "admin");
      assertThat(adminsTask.body()).contains("action=\"/ops/pgtask/tasks/" + id + "/retry\"");
      String cookie = cookie(adminsTask);
      HttpResponse<String> noToken = post(app, "/ops/pgtask/tasks/" + id + "/retry", "admin", "", cookie);
      assertThat(noToken.statusCode()).as("an ADMIN's POST without the dashboard's token").isEqualTo(403);
      assertThat(noToken.body()).contains("security token");
      HttpResponse<String> otherToken = post(app, "/ops/pgtask/tasks/" + id + "/retry", "admin",
          "csrf=" + "A".repeat(43), cookie);
      assertThat(otherToken.statusCode()).as("an ADMIN's POST with another token").isEqualTo(403);
      assertThat(state(id)).as("after the refused POSTs").isEqualTo("discarded");

      // (d) the DashboardAccess reads the principal: a plain user's retry, with the token, is refused
      HttpResponse<String> viewersRetry = post(app, "/ops/pgtask/tasks/" + id + "/retry", "viewer",
          "csrf=" + token(cookie), cookie);
      assertThat(viewersRetry.statusCode()).as("a plain user's retry").isEqualTo(403);
      assertThat(viewersRetry.body()).contains("not allowed");
      assertThat(state(id)).as("after the plain user's retry").isEqualTo("discarded");
      HttpResponse<String> adminsRetry = post(app, "/ops/pgtask/tasks/" + id + "/retry", "admin",
          "csrf=" + token(cookie), cookie);
      assertThat(adminsRetry.statusCode()).as("an ADMIN's retry").isEqualTo(303);
      assertThat(adminsRetry.headers().firstValue("Location")).hasValueSatisfying(
          l -> assertThat(l).endsWith("/ops/pgtask/tasks/" + id + "?done=retried"));
      assertThat(state(id)).isIn("available", "scheduled");
    }
  }

  @Test
  void withoutTheDocumentedCsrfExemptionSpringRefusesTheDashboardsForms() throws Exception {
    long id = discardedTask();
    try (ConfigurableApplicationContext app = web(DashboardWithoutCsrfExemptionApp.class)) {
      HttpResponse<String> page = get(app, "/ops/pgtask/tasks/" + id, "admin");
      assertThat(page.body()).contains("action=\"/ops/pgtask/tasks/" + id + "/retry\"");
      String cookie = cookie(page);
      HttpResponse<String> retry = post(app, "/ops/pgtask/tasks/" + id + "/retry", "admin", "csrf=" + token(cookie),
          cookie);
      // Spring's CSRF filter runs before its authentication: its refusal's error page, not authenticated, may come as 401
      assertThat(retry.statusCode()).as("the dashboard's own form, refused by Spring's CSRF filter").isIn(401, 403);
      assertThat(retry.body()).as("not the dashboard's refusal").doesNotContain("security token");
      assertThat(state(id)).isEqualTo("discarded");
    }
  }
}
