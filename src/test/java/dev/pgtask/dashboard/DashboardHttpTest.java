package dev.pgtask.dashboard;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgtask.NewTask;
import dev.pgtask.TaskOptions;
import dev.pgtask.testsupport.QueueDatabase;
import java.net.ConnectException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Collections;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The dashboard over plain HTTP (docs/dashboard.md, "Security model"): status codes of pages and
 * actions, read-only by default (a forged POST is refused 403 and changes nothing), the CSRF token
 * (a POST without it, or with another, is refused 403 and changes nothing; with it the action runs),
 * every read in a read-only transaction, and the default bind address (this machine only).
 */
class DashboardHttpTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("dashboard_http", 6,
      "CREATE TABLE public.write_probe (n int)");

  private static final HttpClient HTTP = HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NEVER).build();

  private static DashboardServer readOnly;
  private static DashboardServer readWrite;

  @BeforeAll
  static void start() {
    readOnly = Dashboard.builder(queue.pool()).port(0).start();
    readWrite = Dashboard.builder(queue.pool()).port(0).access(DashboardAccess.READ_WRITE).start();
  }

  @AfterAll
  static void stop() {
    readOnly.close();
    readWrite.close();
  }

  private static HttpResponse<String> get(DashboardServer s, String path) throws Exception {
    return HTTP.send(HttpRequest.newBuilder(URI.create(s.url() + path.substring(1))).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static HttpResponse<String> post(DashboardServer s, String path, String form, String cookie)
      throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(s.url() + path.substring(1)))
        .header("Content-Type", "application/x-www-form-urlencoded").POST(HttpRequest.BodyPublishers.ofString(form));
    if (cookie != null) {
      b.header("Cookie", cookie);
    }
    return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  private static long discardedTask() throws Exception {
    long id = queue.pgtask().enqueue(NewTask.of("http.task", Map.of("n", 1), TaskOptions.defaults()));
    queue.sql().exec("UPDATE pgtask.task SET state = 'discarded', finished_at = now(), attempt = 1, max_attempts = 1,"
        + " errors = '[{\"attempt\": 1, \"error\": \"boom\"}]' WHERE id = " + id);
    return id;
  }

  @Test
  void pagesAnswer200AndBadInputAnswersByName() throws Exception {
    long id = discardedTask();
    for (String page : new String[] {"/", "/tasks", "/tasks/" + id, "/running", "/errors", "/tenants", "/schedules",
        "/workers", "/limits", "/tasks?state=discarded&kind=http.task&since=1h&error=bo",
        "/tasks?from=2026-12-04T10:00&until=2026-12-04T11:00:30", "/tasks?from=2026-12-04T10:00:00Z",
        "/errors?from=2026-12-04T10:00&until=2026-12-04T11:00"}) {
      HttpResponse<String> r = get(readOnly, page);
      assertThat(r.statusCode()).as(page).isEqualTo(200);
      assertThat(r.headers().firstValue("Content-Security-Policy")).as(page).hasValueSatisfying(
          csp -> assertThat(csp).startsWith("default-src 'none'"));
      assertThat(r.body()).as(page).doesNotContain("<script");
    }
    assertThat(get(readOnly, "/style.css").statusCode()).isEqualTo(200);
    assertThat(get(readOnly, "/tasks/" + (id + 1000)).statusCode()).isEqualTo(404);
    assertThat(get(readOnly, "/no-such-page").statusCode()).isEqualTo(404);
    HttpResponse<String> badState = get(readOnly, "/tasks?state=lost");
    assertThat(badState.statusCode()).isEqualTo(400);
    assertThat(badState.body()).contains("state must be one of");
    assertThat(get(readOnly, "/tasks?since=soon").statusCode()).isEqualTo(400);
    for (String badRange : new String[] {"/tasks?from=2026-02-30T10:00", "/tasks?until=soon", "/errors?from=10:00",
        "/tasks?from=2026-12-04"}) {
      HttpResponse<String> r = get(readOnly, badRange);
      assertThat(r.statusCode()).as(badRange).isEqualTo(400);
      assertThat(r.body()).as(badRange).containsPattern("(from|until) must be a date and time in UTC");
    }
    HttpResponse<String> reversed = get(readOnly, "/tasks?from=2026-12-04T11:00&until=2026-12-04T10:00");
    assertThat(reversed.statusCode()).isEqualTo(400);
    assertThat(reversed.body()).contains("from must be before until");
    assertThat(get(readOnly, "/tasks/abc").statusCode()).isEqualTo(400);
    assertThat(HTTP.send(HttpRequest.newBuilder(URI.create(readOnly.url())).method("PUT",
        HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(405);
  }

  @Test
  void readOnlyByDefaultShowsNoActionAndRefusesAForgedPost() throws Exception {
    long id = discardedTask();
    HttpResponse<String> page = get(readOnly, "/tasks/" + id);
    assertThat(page.body()).doesNotContain("<form method=\"post\"").contains("read-only");
    String cookie = cookie(page);
    HttpResponse<String> forged = post(readOnly, "/tasks/" + id + "/retry", "csrf=" + token(cookie), cookie);
    assertThat(forged.statusCode()).isEqualTo(403);
    assertThat(forged.body()).contains("read-only");
    assertThat(get(readOnly, "/bulk?action=retry&kind=http.task").statusCode()).isEqualTo(403);
    assertThat(post(readOnly, "/bulk", "action=retry&kind=http.task&csrf=" + token(cookie), cookie).statusCode())
        .isEqualTo(403);
    assertThat(queue.pgtask().find(id).orElseThrow().state()).as("nothing changed").isEqualTo("discarded");
  }

  @Test
  void aPostWithoutTheSessionsTokenIsRefusedAndChangesNothing() throws Exception {
    long id = discardedTask();
    HttpResponse<String> page = get(readWrite, "/tasks/" + id);
    assertThat(page.body()).contains("action=\"/tasks/" + id + "/retry\"");
    String cookie = cookie(page);
    assertThat(page.headers().firstValue("Set-Cookie").orElseThrow()).contains("HttpOnly").contains("SameSite=Strict");

    assertThat(post(readWrite, "/tasks/" + id + "/retry", "", null).statusCode()).as("no cookie, no token")
        .isEqualTo(403);
    assertThat(post(readWrite, "/tasks/" + id + "/retry", "", cookie).statusCode()).as("cookie, no token")
        .isEqualTo(403);
    assertThat(post(readWrite, "/tasks/" + id + "/retry", "csrf=" + "A".repeat(43), cookie).statusCode())
        .as("another token").isEqualTo(403);
    assertThat(post(readWrite, "/tasks/" + id + "/retry", "csrf=" + token(cookie), null).statusCode())
        .as("the token without its cookie").isEqualTo(403);
    assertThat(queue.pgtask().find(id).orElseThrow().state()).as("nothing changed").isEqualTo("discarded");

    HttpResponse<String> ok = post(readWrite, "/tasks/" + id + "/retry", "csrf=" + token(cookie), cookie);
    assertThat(ok.statusCode()).isEqualTo(303);
    assertThat(ok.headers().firstValue("Location")).contains("/tasks/" + id + "?done=retried");
    assertThat(queue.pgtask().find(id).orElseThrow().state()).isIn("available", "scheduled");
  }

  @Test
  void everyReadRunsInAReadOnlyTransaction() throws Exception {
    // the errors page's read, replaced by one that writes: the page fails and nothing is written
    queue.sql().exec("CREATE OR REPLACE FUNCTION pgtask.error_groups(p_since interval, p_from timestamptz, "
        + "p_until timestamptz, p_limit integer) "
        + "RETURNS TABLE (kind text, error text, tasks bigint, retryable bigint, discarded bigint, "
        + "first_seen timestamptz, last_seen timestamptz) LANGUAGE plpgsql AS $$ BEGIN "
        + "INSERT INTO public.write_probe VALUES (1); RETURN; END $$");
    HttpResponse<String> r = get(readWrite, "/errors");
    assertThat(r.statusCode()).isEqualTo(500);
    assertThat(r.body()).contains("read-only transaction");
    assertThat(queue.sql().count("SELECT count(*) FROM public.write_probe")).isZero();
  }

  @Test
  void listensOnLoopbackOnlyByDefault() throws Exception {
    assertThat(Dashboard.DEFAULT_BIND).isEqualTo("127.0.0.1");
    assertThat(readOnly.address().getAddress().isLoopbackAddress()).isTrue();
    Optional<InetAddress> other = Collections.list(NetworkInterface.getNetworkInterfaces()).stream()
        .flatMap(i -> Collections.list(i.getInetAddresses()).stream())
        .filter(a -> a instanceof Inet4Address && !a.isLoopbackAddress()).findFirst();
    if (other.isPresent()) {
      assertThatThrownBy(() -> {
        try (Socket s = new Socket()) {
          s.connect(new InetSocketAddress(other.get(), readOnly.port()), 2000);
        }
      }).as("connecting on " + other.get()).isInstanceOf(ConnectException.class);
    }
  }

  private static String cookie(HttpResponse<String> r) {
    String set = r.headers().firstValue("Set-Cookie").orElseThrow();
    return set.substring(0, set.indexOf(';'));
  }

  private static String token(String cookie) {
    Matcher m = Pattern.compile("pgtask_csrf=([A-Za-z0-9_-]+)").matcher(cookie);
    assertThat(m.find()).isTrue();
    return m.group(1);
  }

}
