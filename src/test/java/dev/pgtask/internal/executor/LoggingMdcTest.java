package dev.pgtask.internal.executor;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.NewTask;
import dev.pgtask.PgTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskOptions;
import dev.pgtask.testing.PgTaskTester;
import dev.pgtask.testsupport.MdcTestProvider;
import dev.pgtask.testsupport.TestDatabase;
import java.io.File;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.slf4j.MDC;

/**
 * docs/logging.md: while a handler runs, the MDC names its task (id, kind, queue, attempt, tenant,
 * worker); afterwards pgtask's keys are gone and the caller's are kept. The suite's binding
 * (slf4j-simple) ignores the MDC, so this runs pgtask in a class loader of its own whose SLF4J
 * provider keeps one.
 */
class LoggingMdcTest {

  @Test
  @SuppressWarnings("unchecked")
  void theMdcNamesTheRunningTaskAndIsClearedAfterIt() throws Exception {
    List<URL> urls = new ArrayList<>();
    for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
      urls.add(new File(entry).toURI().toURL());
    }
    Map<String, Object> result;
    try (TestDatabase db = TestDatabase.create("logging_mdc");
        URLClassLoader loader = new URLClassLoader(urls.toArray(URL[]::new), ClassLoader.getPlatformClassLoader())) {
      String before = System.getProperty("slf4j.provider");
      System.setProperty("slf4j.provider", MdcTestProvider.class.getName());
      Thread self = Thread.currentThread();
      ClassLoader context = self.getContextClassLoader();
      self.setContextClassLoader(loader);
      try {
        result = (Map<String, Object>) Class.forName(Scenario.class.getName(), true, loader)
            .getMethod("run", String.class, String.class, String.class).invoke(null, db.url(), db.user(), db.password());
      } finally {
        self.setContextClassLoader(context);
        if (before == null) {
          System.clearProperty("slf4j.provider");
        } else {
          System.setProperty("slf4j.provider", before);
        }
      }
    }
    String worker = (String) result.get("workerTask");
    assertThat((Map<String, String>) result.get("onWorker")).containsAllEntriesOf(Map.of(
        "pgtask.task_id", worker, "pgtask.kind", "mdc.log", "pgtask.queue", "mdc",
        "pgtask.attempt", "1", "pgtask.tenant", "acme", "pgtask.worker", "mdc-worker"));
    assertThat((Map<String, String>) result.get("onTester")).containsEntry("pgtask.task_id", (String) result.get("testerTask"))
        .containsEntry("pgtask.worker", "mdc-tester").containsEntry("app.request", "r-1")
        .doesNotContainKey("pgtask.tenant");
    assertThat((Map<String, String>) result.get("after")).as("after the task: pgtask's keys removed, the caller's kept")
        .isEqualTo(Map.of("app.request", "r-1"));
  }

  /** Runs in the class loader with an MDC: a worker's task, then a task drained in this thread. */
  public static final class Scenario {
    public static Map<String, Object> run(String url, String user, String password) throws Exception {
      HikariConfig config = new HikariConfig();
      config.setJdbcUrl(url);
      config.setUsername(user);
      config.setPassword(password);
      config.setMaximumPoolSize(4);
      config.setDriverClassName("org.postgresql.Driver"); // loaded from this class loader (the context loader)
      Map<String, Object> out = new HashMap<>();
      try (HikariDataSource ds = new HikariDataSource(config)) {
        Map<Long, Map<String, String>> seen = new ConcurrentHashMap<>();
        PgTaskWorker.Builder b = PgTaskWorker.builder(ds).queues("mdc").concurrency(2).workerId("mdc-worker")
            .handler("mdc.log", JsonNode.class, (ctx, p) -> seen.put(ctx.taskId(), MDC.getCopyOfContextMap()));
        PgTask pgtask = PgTask.create(ds);
        long onWorker = pgtask.enqueue(NewTask.of("mdc.log", Map.of(), TaskOptions.defaults().withQueue("mdc")
            .withTenant("acme")));
        PgTaskWorker w = b.build().start();
        try {
          long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
          while (!seen.containsKey(onWorker) && System.nanoTime() < deadline) {
            Thread.onSpinWait();
          }
        } finally {
          w.close();
        }
        long onTester = pgtask.enqueue(NewTask.of("mdc.log", Map.of(), TaskOptions.defaults().withQueue("mdc")));
        MDC.put("app.request", "r-1");
        PgTaskTester.of(b.workerId("mdc-tester").build()).drain().assertAllCompleted();
        out.put("workerTask", Long.toString(onWorker));
        out.put("testerTask", Long.toString(onTester));
        out.put("onWorker", seen.get(onWorker));
        out.put("onTester", seen.get(onTester));
        out.put("after", MDC.getCopyOfContextMap());
        MDC.clear();
      }
      return out;
    }
  }
}
