package dev.pgtask.testsupport;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;

/**
 * A real headless Chromium (Debian's {@code chromium} and {@code chromium-driver}) driven through
 * WebDriver (Selenium), one per test class. Where either binary is missing the test is skipped with
 * the reason; with {@code PGTASK_REQUIRE_BROWSER=1} (set by {@code .ci/run}) it fails instead, so CI
 * never passes by skipping. {@link #screenshot} keeps a page's picture under
 * {@code target/dashboard-screenshots} for docs/dashboard.md.
 */
public final class Browser implements AutoCloseable {

  /** The environment variable that turns a missing browser from a skip into a failure. */
  public static final String REQUIRE_ENV = "PGTASK_REQUIRE_BROWSER";

  private static final List<String> CHROMIUM = List.of("/usr/bin/chromium", "/usr/bin/chromium-browser");
  private static final List<String> DRIVER = List.of("/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver");

  private final ChromeDriver driver;

  private Browser(ChromeDriver driver) {
    this.driver = driver;
  }

  /** A headless Chromium, or the test skipped (failed under {@link #REQUIRE_ENV}) when none is installed. */
  public static Browser start() {
    String chromium = first(CHROMIUM);
    String chromedriver = first(DRIVER);
    if (chromium == null || chromedriver == null) {
      String why = "no headless browser: " + (chromium == null ? "chromium" : "chromium-driver")
          + " is not installed (Debian: apt-get install -y chromium chromium-driver)";
      if ("1".equals(System.getenv(REQUIRE_ENV))) {
        throw new AssertionError(why + ", and " + REQUIRE_ENV + "=1 says this run must test it");
      }
      Assumptions.abort(why + "; the dashboard's browser tests are skipped");
    }
    ChromeOptions options = new ChromeOptions();
    options.setBinary(chromium);
    options.addArguments("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
        "--window-size=1400,1000", "--disable-extensions", "--no-first-run");
    ChromeDriverService service = new ChromeDriverService.Builder().usingDriverExecutable(new File(chromedriver))
        .usingAnyFreePort().build();
    ChromeDriver driver = new ChromeDriver(service, options);
    driver.manage().timeouts().pageLoadTimeout(Duration.ofSeconds(30));
    return new Browser(driver);
  }

  private static String first(List<String> paths) {
    return paths.stream().filter(p -> Files.isExecutable(Path.of(p))).findFirst().orElse(null);
  }

  /** The WebDriver. */
  public ChromeDriver driver() {
    return driver;
  }

  /**
   * Clicks {@code element} (a link or a form's button) and returns once the page it leads to has
   * loaded: a click returns when the event is dispatched, and a find right after it could read the
   * old page (a red CI run: the flash of the page after a retry not found).
   */
  public void clickAndLoad(org.openqa.selenium.WebElement element) {
    clickAndLoad(element, "click");
  }

  /** As {@link #clickAndLoad(org.openqa.selenium.WebElement)}, calling the element's {@code method} ("click", "submit"). */
  public void clickAndLoad(org.openqa.selenium.WebElement element, String method) {
    org.openqa.selenium.WebElement page = driver.findElement(org.openqa.selenium.By.tagName("html"));
    if (method.equals("click")) {
      element.click(); // the browser's own click, as a user's
    } else {
      ((org.openqa.selenium.JavascriptExecutor) driver).executeScript("arguments[0]." + method + "();", element);
    }
    org.openqa.selenium.support.ui.WebDriverWait wait =
        new org.openqa.selenium.support.ui.WebDriverWait(driver, Duration.ofSeconds(20));
    // the old page is gone when asking about its root fails: as stale, or (Chromium, mid-navigation)
    // as a node that "does not belong to the document" (a CI run), so any refusal counts
    wait.until(d -> {
      try {
        page.isEnabled();
        return false;
      } catch (org.openqa.selenium.WebDriverException gone) {
        return true;
      }
    });
    wait.until(d -> {
      try {
        return "complete".equals(((org.openqa.selenium.JavascriptExecutor) d).executeScript("return document.readyState"));
      } catch (org.openqa.selenium.WebDriverException navigating) {
        return false;
      }
    });
  }

  /** Saves the current page as {@code target/dashboard-screenshots/<name>.png}. */
  public void screenshot(String name) {
    try {
      Path dir = Path.of("target", "dashboard-screenshots");
      Files.createDirectories(dir);
      File shot = driver.getScreenshotAs(OutputType.FILE);
      Files.copy(shot.toPath(), dir.resolve(name + ".png"), StandardCopyOption.REPLACE_EXISTING);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public void close() {
    driver.quit();
  }
}
