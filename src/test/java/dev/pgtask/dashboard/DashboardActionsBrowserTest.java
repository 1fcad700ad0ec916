package dev.pgtask.dashboard;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgtask.NewTask;
import dev.pgtask.TaskOptions;
import dev.pgtask.testsupport.Browser;
import dev.pgtask.testsupport.QueueDatabase;
import dev.pgtask.testsupport.WorkerFixture;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.WebDriver;

/**
 * The dashboard with actions allowed ({@link DashboardAccess#READ_WRITE}, as {@code pgtask dashboard
 * --read-write}) in a real headless Chromium against a real worker: a discarded task retried from its
 * page runs again; a bulk retry by filter shows its dry run (matches per state, what would change and
 * be skipped, nothing changed) and then reports what it changed and skipped; a POST with another
 * token than the session's is refused and changes nothing.
 */
class DashboardActionsBrowserTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("dashboard_actions", 8);

  @RegisterExtension
  final WorkerFixture workers = WorkerFixture.on(queue);

  private static Browser browser;
  private static DashboardServer server;
  private static WebDriver web;

  @BeforeAll
  static void start() {
    browser = Browser.start();
    web = browser.driver();
    server = Dashboard.builder(queue.pool()).port(0).access(DashboardAccess.READ_WRITE).start();
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

  private static void open(String path) {
    web.get(server.url() + path.substring(1));
  }

  /** Discards its task until the flag row says otherwise. */
  private static final java.util.concurrent.atomic.AtomicBoolean FAIL = new java.util.concurrent.atomic.AtomicBoolean(true);

  @Test
  void retryFromTheTaskPageAndBulkRetryWithItsDryRunAndATokenFromElsewhereIsRefused() throws Exception {
    workers.start(workers.builder().concurrency(2).handler("flaky.call", Map.class, (ctx, p) -> {
      if (FAIL.get()) {
        throw new IllegalStateException("upstream 503");
      }
    }));
    long one = queue.pgtask().enqueue(NewTask.of("flaky.call", Map.of("n", 0), TaskOptions.defaults().withMaxAttempts(1)));
    workers.awaitState(one, "discarded", Duration.ofSeconds(20));

    // a token from elsewhere: refused, nothing changed
    open("/tasks/" + one);
    ((JavascriptExecutor) web).executeScript("document.querySelector('form[action$=\"/retry\"] input[name=csrf]')"
        + ".value = 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';");
    browser.clickAndLoad(web.findElement(By.cssSelector("form[action$='/retry'] button")));
    assertThat(web.findElement(By.tagName("h1")).getText()).isEqualTo("Forbidden");
    assertThat(web.findElement(By.id("problem")).getText()).contains("security token");
    assertThat(queue.pgtask().find(one).orElseThrow().state()).as("nothing changed").isEqualTo("discarded");

    // the page's own form: retried, and it runs again
    FAIL.set(false);
    open("/tasks/" + one);
    browser.clickAndLoad(web.findElement(By.cssSelector("form[action$='/retry'] button")));
    assertThat(web.findElement(By.id("flash")).getText()).contains("retried");
    workers.awaitState(one, "completed", Duration.ofSeconds(20));

    // bulk: 4 discarded and 1 completed task of the kind; the dry run first, then the retry
    FAIL.set(true);
    for (int i = 1; i <= 4; i++) {
      queue.pgtask().enqueue(NewTask.of("flaky.call", Map.of("n", i), TaskOptions.defaults().withMaxAttempts(1)));
    }
    workers.awaitTasks("discarded", 4, Duration.ofSeconds(20));
    FAIL.set(false);
    open("/tasks?kind=flaky.call");
    browser.screenshot("tasks-read-write");
    browser.clickAndLoad(web.findElement(By.id("bulk-retry")));
    assertThat(web.findElement(By.id("dry-run-summary")).getText())
        .isEqualTo("Dry run, nothing changed: 4 task(s) would be retried, 1 skipped.");
    assertThat(web.findElement(By.cssSelector("tr[data-state=discarded] td.changed")).getText()).isEqualTo("4");
    assertThat(web.findElement(By.cssSelector("tr[data-state=completed] td.skipped")).getText()).isEqualTo("1");
    browser.screenshot("bulk-dry-run");
    assertThat(queue.sql().count("SELECT count(*) FROM pgtask.task WHERE state = 'discarded'")).as("dry run").isEqualTo(4);
    browser.clickAndLoad(web.findElement(By.id("bulk-run")));
    assertThat(web.findElement(By.id("bulk-summary")).getText()).isEqualTo("4 task(s) retried, 1 skipped.");
    workers.awaitTasks("completed", 5, Duration.ofSeconds(20));
  }
}
