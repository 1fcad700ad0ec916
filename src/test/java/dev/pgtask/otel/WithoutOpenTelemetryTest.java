package dev.pgtask.otel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.NewTask;
import dev.pgtask.PgTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskOptions;
import dev.pgtask.testsupport.TestDatabase;
import java.io.File;
import java.net.URL;
import java.net.URLClassLoader;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * pgtask works without OpenTelemetry on the classpath (it is an optional dependency): in a class
 * loader that has everything the tests have except OpenTelemetry's jars, a client enqueues and a
 * worker runs the task, and no core class needs an OpenTelemetry class to load.
 */
class WithoutOpenTelemetryTest {

  @Test
  void enqueueAndExecutionWorkWithoutOpenTelemetryOnTheClasspath() throws Exception {
    List<URL> urls = new ArrayList<>();
    for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
      if (!new File(entry).getName().startsWith("opentelemetry-")) {
        urls.add(new File(entry).toURI().toURL());
      }
    }
    try (TestDatabase db = TestDatabase.create("without_otel");
        URLClassLoader loader = new URLClassLoader(urls.toArray(URL[]::new), ClassLoader.getPlatformClassLoader())) {
      assertThatThrownBy(() -> Class.forName("io.opentelemetry.api.OpenTelemetry", false, loader))
          .as("OpenTelemetry is absent from this class loader").isInstanceOf(ClassNotFoundException.class);
      Class<?> scenario = Class.forName(Scenario.class.getName(), true, loader);
      assertThat(scenario.getClassLoader()).isSameAs(loader);
      Thread self = Thread.currentThread();
      ClassLoader before = self.getContextClassLoader();
      self.setContextClassLoader(loader); // the pool loads the driver from the context loader
      Object state;
      try {
        state = scenario.getMethod("run", String.class, String.class, String.class)
            .invoke(null, db.url(), db.user(), db.password());
      } finally {
        self.setContextClassLoader(before);
      }
      assertThat(state).isEqualTo("completed");
    }
  }

  /** Runs in the class loader without OpenTelemetry: enqueue, execute, report the task's state. */
  public static final class Scenario {
    public static String run(String url, String user, String password) throws Exception {
      HikariConfig config = new HikariConfig();
      config.setJdbcUrl(url);
      config.setUsername(user);
      config.setPassword(password);
      config.setMaximumPoolSize(4);
      config.setDriverClassName("org.postgresql.Driver"); // loaded from this class loader (the context loader)
      try (HikariDataSource ds = new HikariDataSource(config)) {
        long id = PgTask.create(ds).enqueue(NewTask.of("plain.work", Map.of(), TaskOptions.defaults()));
        CountDownLatch ran = new CountDownLatch(1);
        PgTaskWorker worker = PgTaskWorker.builder(ds).concurrency(2)
            .handler("plain.work", (ctx, payload) -> ran.countDown())
            .build().start();
        try {
          if (!ran.await(20, TimeUnit.SECONDS)) {
            return "did not run";
          }
          for (int i = 0; i < 400; i++) { // the completion commits right after the handler returns
            try (Connection c = ds.getConnection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT state FROM pgtask.tasks WHERE id = " + id)) {
              rs.next();
              if ("completed".equals(rs.getString(1))) {
                return "completed";
              }
            }
            Thread.onSpinWait();
          }
          return "not completed";
        } finally {
          worker.close();
        }
      }
    }
  }
}
