package dev.pgtask.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgtask.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

class DemoHandlersTest {

  @Test
  void ensureSchemaIsSafeWhenManyWorkersStartAtOnce() throws Exception {
    try (TestDatabase db = TestDatabase.create("demo_schema")) {
      int starters = 8;
      ExecutorService pool = Executors.newFixedThreadPool(starters);
      CountDownLatch go = new CountDownLatch(1);
      List<Future<?>> results = new ArrayList<>();
      for (int i = 0; i < starters; i++) {
        results.add(pool.submit(() -> {
          go.await();
          DemoHandlers.ensureSchema(db.dataSource());
          return null;
        }));
      }
      go.countDown();
      for (Future<?> f : results) {
        f.get(); // rethrows a duplicate-object error, if the race were not handled
      }
      pool.shutdown();
      DemoHandlers.ensureSchema(db.dataSource()); // and again, later: a no-op

      try (Connection c = db.connect();
           ResultSet rs = c.createStatement().executeQuery(
               "SELECT string_agg(column_name || ' ' || data_type, ', ' ORDER BY ordinal_position)"
                   + " FROM information_schema.columns WHERE table_schema = 'pgtask_demo' AND table_name = 'execution'")) {
        rs.next();
        assertThat(rs.getString(1)).isEqualTo("task_id bigint, attempt integer, tenant text, worker text,"
            + " started_at timestamp with time zone, finished_at timestamp with time zone");
      }
      try (Connection c = db.connect();
           ResultSet rs = c.createStatement().executeQuery(
               "SELECT count(*) FROM pg_indexes WHERE schemaname = 'pgtask_demo' AND indexdef LIKE '%UNIQUE%'")) {
        rs.next();
        assertThat(rs.getInt(1)).as("unique indexes on the execution table (duplicates must stay visible)").isZero();
      }
    }
  }
}
