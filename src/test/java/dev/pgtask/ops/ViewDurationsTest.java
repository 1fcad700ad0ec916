package dev.pgtask.ops;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgtask.NewTask;
import dev.pgtask.PgTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskOptions;
import dev.pgtask.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * {@code pgtask.running.running_for} and {@code pgtask.tenant_locks.held_for} are never negative,
 * even for a reader whose transaction (and so its {@code now()}) started before the task's (V4
 * measures them with {@code clock_timestamp()}). A reader inside a transaction makes it deterministic.
 */
class ViewDurationsTest {

  @Test
  void runningForAndHeldForAreNeverNegative() throws Exception {
    try (TestDatabase db = TestDatabase.create("view_durations");
        Connection reader = db.connect(); Statement st = reader.createStatement()) {
      reader.setAutoCommit(false);
      st.execute("SELECT now()"); // the reader's transaction starts here
      CountDownLatch started = new CountDownLatch(1);
      CountDownLatch release = new CountDownLatch(1);
      PgTaskWorker worker = PgTaskWorker.builder(db.dataSource()).concurrency(1).workerId("durations")
          .handler("test.hold", (ctx, p) -> {
            started.countDown();
            release.await(30, TimeUnit.SECONDS);
          }).build().start();
      try {
        PgTask.create(db.dataSource()).enqueue(NewTask.of("test.hold", null, TaskOptions.defaults().withTenant("acme")));
        assertThat(started.await(20, TimeUnit.SECONDS)).isTrue();
        try (ResultSet rs = st.executeQuery("SELECT (SELECT running_for >= interval '0' FROM pgtask.running),"
            + " (SELECT held_for >= interval '0' FROM pgtask.tenant_locks)")) {
          rs.next();
          assertThat(rs.getBoolean(1)).as("running_for >= 0").isTrue();
          assertThat(rs.getBoolean(2)).as("held_for >= 0").isTrue();
        }
        reader.rollback();
      } finally {
        release.countDown();
        worker.close();
      }
    }
  }
}
