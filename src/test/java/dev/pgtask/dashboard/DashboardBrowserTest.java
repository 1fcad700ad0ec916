package dev.pgtask.dashboard;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgtask.NewTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskOptions;
import dev.pgtask.testsupport.Browser;
import dev.pgtask.testsupport.QueueDatabase;
import dev.pgtask.testsupport.WorkerFixture;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;

/**
 * The read-only dashboard in a real headless Chromium against a real database and a real worker
 * (docs/dashboard.md): every page renders (a screenshot of each kept under
 * target/dashboard-screenshots), no action form anywhere and a POST forged from the page refused;
 * a task whose payload, kind, tenant and error carry markup shows it as text and runs no script;
 * the task list's pages visit every task exactly once; a task's page shows the full stack trace of
 * each attempt and its explanation.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class DashboardBrowserTest {

  static final String SCRIPT = "<script>window.__pwned = 1</script>";
  static final String IMG = "\"><img src=x onerror=\"window.__pwned = 2\">";

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("dashboard_browser", 8);

  @RegisterExtension
  final WorkerFixture workers = WorkerFixture.on(queue);

  private static Browser browser;
  private static DashboardServer server;
  private static WebDriver web;

  @BeforeAll
  static void start() {
    browser = Browser.start();
    web = browser.driver();
    server = Dashboard.builder(queue.pool()).port(0).pageSize(7).start();
  }

  @AfterAll
  static void stop() {
    if (server != null) {
      server.close();
    }
    if (browser != null) {
      browser.close();
    }
  }

  static void failWithCause(Map<?, ?> payload) {
    throw new IllegalStateException("payment refused for " + payload.get("order") + " " + SCRIPT + IMG,
        new java.net.SocketTimeoutException("gateway did not answer"));
  }

  private static void open(String path) {
    web.get(server.url() + path.substring(1));
  }

  /** What a script of the data would have set, or null. */
  private static Object pwned() {
    return ((JavascriptExecutor) web).executeScript("return window.__pwned === undefined ? null : window.__pwned;");
  }

  private static void assertNoInjectedMarkup(String where) {
    assertThat(pwned()).as(where + ": a script of the data ran").isNull();
    assertThat(web.findElements(By.tagName("script"))).as(where + ": script elements").isEmpty();
    assertThat(web.findElements(By.cssSelector("img"))).as(where + ": img elements").isEmpty();
  }

  @Test
  @Order(1)
  void everyPageRendersReadOnlyAndTheTaskPageShowsEveryAttemptsStackTraceAsText() throws Exception {
    workers.start(workers.builder().concurrency(2).retryBackoff(Duration.ofMillis(1), Duration.ofMillis(5))
        .queues("default", "mail")
        .handler("shop.charge" + SCRIPT, Map.class, (ctx, p) -> failWithCause(p))
        .handler("mail.send", Map.class, (ctx, p) -> { }));
    long bad = queue.pgtask().enqueue(NewTask.of("shop.charge" + SCRIPT, Map.of("order", "A-17" + SCRIPT, "note", IMG),
        TaskOptions.defaults().withMaxAttempts(2).withTenant("tenant" + IMG)));
    for (int i = 0; i < 5; i++) {
      queue.pgtask().enqueue(NewTask.of("mail.send", Map.of("to", "u" + i), TaskOptions.defaults().withQueue("mail")));
    }
    workers.awaitState(bad, "discarded", Duration.ofSeconds(20));
    workers.awaitTasks("completed", 5, Duration.ofSeconds(20));

    for (String[] page : new String[][] {{"/", "overview"}, {"/tasks", "tasks"}, {"/running", "running"},
        {"/errors", "errors"}, {"/tenants", "tenants"}, {"/schedules", "schedules"}, {"/workers", "workers"},
        {"/limits", "limits"}, {"/tasks/" + bad, "task"}}) {
      open(page[0]);
      assertThat(web.findElement(By.tagName("h1")).getText()).as(page[0]).isNotBlank();
      assertThat(web.findElement(By.id("mode")).getText()).as(page[0]).isEqualTo("read-only");
      assertThat(web.findElements(By.cssSelector("form[method=post]"))).as(page[0] + ": action forms").isEmpty();
      assertNoInjectedMarkup(page[0]);
      browser.screenshot(page[1]);
    }

    open("/tasks/" + bad);
    assertThat(web.findElement(By.id("payload")).getText()).contains(SCRIPT).contains("onerror");
    assertThat(web.findElement(By.id("fields")).getText()).contains("shop.charge" + SCRIPT).contains("tenant" + IMG);
    List<WebElement> attempts = web.findElements(By.cssSelector("div.attempt"));
    assertThat(attempts).hasSize(2);
    for (WebElement a : attempts) {
      String stack = a.findElement(By.cssSelector("pre.error")).getText();
      assertThat(stack).contains("java.lang.IllegalStateException: payment refused for A-17" + SCRIPT)
          .contains("at " + DashboardBrowserTest.class.getName() + ".failWithCause(")
          .contains("Caused by: java.net.SocketTimeoutException: gateway did not answer");
    }
    assertThat(web.findElement(By.id("explanation")).getText()).startsWith("task " + bad + " finished as discarded");
    assertThat(web.findElement(By.id("actions")).findElements(By.tagName("form"))).as("actions").isEmpty();

    open("/errors");
    assertThat(web.findElement(By.id("errors")).getText()).contains("payment refused for A-17" + SCRIPT);
    assertThat(web.findElements(By.cssSelector("a.retry-group"))).as("read-only: no retry").isEmpty();
  }

  @Test
  @Order(2)
  void aPostForgedFromThePageIsRefused() {
    long id = queue.pgtask().enqueue(NewTask.of("forged.target", Map.of(), TaskOptions.defaults()));
    open("/tasks/" + id);
    // a form the page does not offer, built in the page and submitted with the session's cookie
    ((JavascriptExecutor) web).executeScript(
        "const f = document.createElement('form'); f.method = 'post'; f.action = arguments[0];"
            + "f.id = 'forged'; document.body.appendChild(f);", "/tasks/" + id + "/delete");
    browser.clickAndLoad(web.findElement(By.id("forged")), "submit");
    assertThat(web.findElement(By.tagName("h1")).getText()).isEqualTo("Forbidden");
    assertThat(web.findElement(By.id("problem")).getText()).contains("read-only");
    assertThat(queue.pgtask().find(id)).as("not deleted").isPresent();
  }

  @Test
  @Order(3)
  void theTaskListsPagesVisitEveryTaskExactlyOnce() throws Exception {
    List<Long> ids = new ArrayList<>();
    for (int i = 0; i < 30; i++) {
      ids.add(queue.pgtask().enqueue(NewTask.of("page.me", Map.of("i", i),
          TaskOptions.defaults().withQueue("paging").withDelay(Duration.ofHours(1)))));
    }
    open("/tasks?queue=paging");
    List<Long> seen = new ArrayList<>();
    int pages = 0;
    while (true) {
      pages++;
      for (WebElement row : web.findElements(By.cssSelector("#tasks tbody tr"))) {
        seen.add(Long.parseLong(row.getAttribute("data-id")));
      }
      List<WebElement> older = web.findElements(By.id("older"));
      if (older.isEmpty()) {
        break;
      }
      browser.clickAndLoad(older.get(0));
    }
    List<Long> newestFirst = new ArrayList<>(ids);
    Collections.reverse(newestFirst);
    assertThat(seen).as("every task once, newest first").containsExactlyElementsOf(newestFirst);
    assertThat(new HashSet<>(seen)).hasSize(30);
    assertThat(pages).as("7 per page").isEqualTo(5);
    Set<String> states = new HashSet<>();
    open("/tasks?queue=paging&state=scheduled&kind=page.me");
    web.findElements(By.cssSelector("#tasks tbody tr td:nth-child(5)")).forEach(td -> states.add(td.getText()));
    assertThat(states).containsExactly("scheduled");
  }
}
