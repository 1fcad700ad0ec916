package dev.pgtask.internal.sql;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgtask.PgTaskWorker;
import dev.pgtask.internal.sql.gen.Tables;
import dev.pgtask.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.Record;
import org.jooq.Table;
import org.jooq.impl.DSL;
import org.jooq.types.YearToSecond;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The operator commands' plain JDBC reads of the views ({@link ViewReads}) return what the
 * generated jOOQ view classes read: the same columns in the same order, and the same values
 * (intervals as the same durations), read in one transaction so that {@code now()} is the same
 * (intervals measured with {@code clock_timestamp()} move between the two reads: they are compared
 * to 5 s; the conversion itself is checked exactly by {@link #intervalsBecomeTheDurationsTheyDenote}).
 */
class ViewReadsTest {

  private static TestDatabase db;

  @BeforeAll
  static void database() {
    db = TestDatabase.create("view_reads");
  }

  @AfterAll
  static void drop() {
    db.close();
  }

  @Test
  void plainReadsOfEveryViewEqualTheGeneratedRecords() throws Exception {
    CountDownLatch started = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    PgTaskWorker worker = PgTaskWorker.builder(db.dataSource()).concurrency(1).workerId("view-reads-worker")
        .handler("test.hold", (ctx, p) -> {
          started.countDown();
          release.await(60, TimeUnit.SECONDS);
        }).build().start();
    try {
      try (Connection c = db.connect(); Statement st = c.createStatement()) {
        st.execute("SELECT pgtask.enqueue('test.hold', '{}', 'default', 'acme')");
        st.execute("SELECT pgtask.enqueue('test.hold', '{}', 'default', 'acme')");
        st.execute("SELECT pgtask.enqueue('report.build', '{}', 'reports', NULL, now() + interval '1 day 02:03:04.5')");
        st.execute("SELECT pgtask.enqueue('mail.send', '{}', 'nobody-works-this', 'globex')");
      }
      assertThat(started.await(30, TimeUnit.SECONDS)).as("the task started").isTrue();

      try (Connection c = db.connect()) {
        c.setAutoCommit(false);
        DSLContext dsl = DSL.using(c, org.jooq.SQLDialect.POSTGRES);
        same("queue_summary", dsl, Tables.QUEUE_SUMMARY, ViewReads.queueSummary(c), 2);
        same("health", dsl, Tables.HEALTH, List.of(ViewReads.health(c)), 1);
        same("unrunnable", dsl, Tables.UNRUNNABLE, ViewReads.unrunnable(c), 1);
        same("tenant_locks", dsl, Tables.TENANT_LOCKS, ViewReads.tenantLocks(c), 1);
        same("running", dsl, Tables.RUNNING, ViewReads.running(c, false), 1);
        same("workers", dsl, Tables.WORKERS, ViewReads.workers(c), 1);
        same("tasks", dsl, Tables.TASKS, ViewReads.tasks(c, null, null, null, 100), 4);
        assertThat(ViewReads.tasks(c, "scheduled", "reports", "report.build", 10)).singleElement()
            .extracting(r -> r.get("kind")).isEqualTo("report.build");
        c.rollback();
      }
    } finally {
      release.countDown();
      worker.close();
    }
  }

  @Test
  void intervalsBecomeTheDurationsTheyDenote() throws Exception {
    String[] intervals = {"0", "00:00:00.85", "00:00:02.01", "00:04:05", "1 day 02:03:04.123456", "-00:00:01.5",
        "1 mon 2 days", "1 year"};
    Duration[] expected = {Duration.ZERO, Duration.ofMillis(850), Duration.ofMillis(2010), Duration.ofSeconds(245),
        Duration.ofDays(1).plusHours(2).plusMinutes(3).plusSeconds(4).plusNanos(123_456_000),
        Duration.ofMillis(-1500), Duration.ofDays(32), Duration.ofDays(360)};
    try (Connection c = db.connect(); Statement st = c.createStatement()) {
      for (int i = 0; i < intervals.length; i++) {
        try (var rs = st.executeQuery("SELECT interval '" + intervals[i] + "'")) {
          rs.next();
          assertThat(ViewReads.duration((org.postgresql.util.PGInterval) rs.getObject(1))).as(intervals[i])
              .isEqualTo(expected[i]);
        }
      }
    }
  }

  private static void same(String view, DSLContext dsl, Table<?> table, List<ViewRow> plain, int atLeast) {
    List<? extends Record> typed = dsl.selectFrom(table).fetch();
    assertThat(plain).as("rows of %s", view).hasSizeGreaterThanOrEqualTo(atLeast).hasSameSizeAs(typed);
    List<String> names = new ArrayList<>();
    for (Field<?> f : table.fields()) {
      names.add(f.getName());
    }
    for (ViewRow row : plain) {
      assertThat(row.columns()).as("columns of %s", view).isEqualTo(names);
      Record match = typed.stream().filter(r -> sameValues(r, row)).findFirst().orElse(null);
      assertThat(match).as("a generated record of %s equal to %s; records: %s", view, row, typed).isNotNull();
    }
  }

  private static boolean sameValues(Record r, ViewRow row) {
    for (int i = 0; i < r.size(); i++) {
      Object t = r.get(i);
      Object p = row.value(i);
      if (t instanceof YearToSecond y) {
        t = toDuration(y);
      }
      boolean equal = t instanceof Object[] a && p instanceof Object[] b ? Arrays.equals(a, b)
          : t instanceof Duration d && p instanceof Duration e ? Math.abs(d.minus(e).toMillis()) < 5_000
          : java.util.Objects.equals(t == null ? null : t.toString(), p == null ? null : p.toString());
      if (!equal) {
        return false;
      }
    }
    return true;
  }

  /** What the commands printed before (jOOQ's interval, months as 30 days). */
  private static Duration toDuration(YearToSecond y) {
    long months = (long) y.getYears() * 12 + y.getMonths();
    Duration d = Duration.ofDays(months * 30 + y.getDays()).plusHours(y.getHours()).plusMinutes(y.getMinutes())
        .plusSeconds(y.getSeconds()).plusNanos(y.getNano());
    return y.getSign() < 0 ? d.negated() : d;
  }
}
