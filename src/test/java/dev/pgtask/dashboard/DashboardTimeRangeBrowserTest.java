package dev.pgtask.dashboard;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgtask.testsupport.Browser;
import dev.pgtask.testsupport.QueueDatabase;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;

/**
 * The tasks page's time range in a real headless Chromium (docs/dashboard.md, "Pages"): the
 * {@code from} and {@code until} inputs (UTC; from inclusive, until exclusive, on a task's last
 * activity) show exactly the tasks inside the range, on every page ("older" keeps the range); an error
 * group's link keeps it; the bulk retry of the filter counts (dry run) and retries exactly those tasks.
 */
class DashboardTimeRangeBrowserTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("dashboard_range", 4);

  private static Browser browser;
  private static DashboardServer server;
  private static WebDriver web;

  @BeforeAll
  static void start() {
    browser = Browser.start();
    web = browser.driver();
    server = Dashboard.builder(queue.pool()).port(0).pageSize(2).access(DashboardAccess.READ_WRITE).start();
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

  /** A discarded task of kind report.build that finished at {@code finishedAt} (UTC); its id. */
  private static long discardedAt(String finishedAt) throws Exception {
    String id = queue.sql().text("SELECT pgtask.enqueue('report.build', '{}', 'parked')");
    queue.sql().exec("UPDATE pgtask.task SET state = 'discarded', attempt = 1, created_at = '2026-12-04 08:00:00+00', "
        + "attempted_at = NULL, finished_at = '" + finishedAt + "+00', "
        + "errors = '[{\"attempt\": 1, \"error\": \"java.io.IOException: disk full\"}]' WHERE id = " + id);
    return Long.parseLong(id);
  }

  private static List<Long> rows() {
    List<Long> ids = new ArrayList<>();
    for (WebElement row : web.findElements(By.cssSelector("#tasks tbody tr"))) {
      ids.add(Long.parseLong(row.getAttribute("data-id")));
    }
    return ids;
  }

  private static String value(String input) {
    return web.findElement(By.cssSelector("#filters input[name=" + input + "]")).getAttribute("value");
  }

  @Test
  void theTasksInTheRangeOnEveryPageTheirErrorGroupAndTheirBulkRetryAndNoOthers() throws Exception {
    discardedAt("2026-12-04 09:59:59");
    List<Long> inside = new ArrayList<>();
    for (String at : List.of("2026-12-04 10:00:00", "2026-12-04 10:15:00", "2026-12-04 10:30:00",
        "2026-12-04 10:45:00", "2026-12-04 10:59:59.999")) {
      inside.add(0, discardedAt(at)); // newest first, as the list shows them
    }
    discardedAt("2026-12-04 11:00:00");
    discardedAt("2026-12-04 11:30:00");

    // the operator fills in the range (a datetime-local input holds the value the browser sends) and filters
    open("/tasks");
    assertThat(web.findElement(By.id("filters")).getText()).contains("Active from (UTC)")
        .contains("Active until (UTC, exclusive)");
    ((JavascriptExecutor) web).executeScript("document.querySelector('#filters input[name=from]').value = arguments[0];"
        + "document.querySelector('#filters input[name=until]').value = arguments[1];", "2026-12-04T10:00",
        "2026-12-04T11:00");
    browser.clickAndLoad(web.findElement(By.cssSelector("#filters button[type=submit]")));
    List<Long> seen = new ArrayList<>();
    int pages = 0;
    while (true) {
      pages++;
      assertThat(value("from") + " " + value("until")).as("the range on page " + pages)
          .isEqualTo("2026-12-04T10:00 2026-12-04T11:00");
      seen.addAll(rows());
      List<WebElement> older = web.findElements(By.id("older"));
      if (older.isEmpty()) {
        break;
      }
      browser.clickAndLoad(older.get(0));
    }
    assertThat(seen).as("the tasks last active from 10:00 (inclusive) until 11:00 (exclusive), newest first")
        .containsExactlyElementsOf(inside);
    assertThat(pages).as("2 per page").isEqualTo(3);

    // the range's error groups: one group of five, whose link lists the same five
    open("/errors?from=2026-12-04T10:00&until=2026-12-04T11:00");
    assertThat(web.findElement(By.cssSelector("#errors tbody tr td.num")).getText()).isEqualTo("5");
    browser.clickAndLoad(web.findElement(By.cssSelector("#errors tbody tr td.num a")));
    assertThat(value("from") + " " + value("until")).isEqualTo("2026-12-04T10:00 2026-12-04T11:00");
    assertThat(rows()).containsExactlyElementsOf(inside.subList(0, 2));

    // the bulk retry of the range: its dry run, then the retry, of the five only
    browser.clickAndLoad(web.findElement(By.id("bulk-retry")));
    assertThat(web.findElement(By.id("bulk-filter")).getText())
        .contains("active from 2026-12-04T10:00 UTC").contains("active until 2026-12-04T11:00 UTC (exclusive)");
    assertThat(web.findElement(By.id("dry-run-summary")).getText())
        .isEqualTo("Dry run, nothing changed: 5 task(s) would be retried, 0 skipped.");
    assertThat(queue.sql().count("SELECT count(*) FROM pgtask.task WHERE state = 'discarded'")).as("after the dry run")
        .isEqualTo(8);
    browser.clickAndLoad(web.findElement(By.id("bulk-run")));
    assertThat(web.findElement(By.id("bulk-summary")).getText()).isEqualTo("5 task(s) retried, 0 skipped.");
    assertThat(queue.sql().rows("SELECT id FROM pgtask.task WHERE state = 'available' ORDER BY id DESC"))
        .as("retried").containsExactlyElementsOf(inside.stream().map(String::valueOf).toList());
    assertThat(queue.sql().rows("SELECT to_char(finished_at AT TIME ZONE 'UTC', 'HH24:MI:SS') FROM pgtask.task "
        + "WHERE state = 'discarded' ORDER BY finished_at")).as("left as they were")
        .containsExactly("09:59:59", "11:00:00", "11:30:00");
  }
}
