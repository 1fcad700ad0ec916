package dev.pgtask.scenario;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.TestDatabase;
import dev.pgtask.testsupport.WorkerProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A kind's rate limit of 20 starts a second with a burst of 5 (pgtask.set_limit), under three
 * worker processes, on the database clock: in every 1-second window at most 5 + 20 of its 200
 * tasks start (their claim instants, attempted_at), no task spends an attempt waiting for a token,
 * and the workers start each task when its token is due (their due timers, not their 5-second
 * polls: 200 tasks take about (200 - 5) / 20 = 9.75 s, not minutes).
 */
class RateLimitIT {

  static TestDatabase db;
  static Db sql;
  final List<WorkerProcess> workers = new ArrayList<>();

  @BeforeAll
  static void setUp() {
    db = TestDatabase.create("rate_limit");
    sql = new Db(db);
  }

  @AfterAll
  static void tearDown() {
    db.close();
  }

  @Test
  void aKindRateOfTwentyASecondWithBurstFiveHoldsInEverySecondOnTheDatabaseClock() throws Exception {
    try {
      sql.exec("SELECT pgtask.set_limit('kind', 'demo.record', per_second => 20, burst => 5)");
      for (String name : List.of("r1", "r2", "r3")) {
        workers.add(WorkerProcess.start(db, name, Faults.args(name, "--poll-interval", "5s")));
      }
      for (String name : List.of("r1", "r2", "r3")) {
        Faults.awaitUp(sql, name);
      }
      sql.exec("SELECT pgtask.enqueue('demo.record', '{\"ms\": 10}', tenant => CASE WHEN i % 2 = 0 THEN 't' || (i % 7) END) "
          + "FROM generate_series(1, 200) i");
      Faults.awaitAllFinal(sql, Duration.ofSeconds(60));

      long worstWindow = sql.count("SELECT max((SELECT count(*) FROM pgtask.task b WHERE b.kind = 'demo.record' "
          + "AND b.attempted_at >= a.attempted_at AND b.attempted_at < a.attempted_at + interval '1 second')) "
          + "FROM pgtask.task a WHERE a.kind = 'demo.record'");
      double span = Double.parseDouble(sql.text("SELECT extract(epoch FROM max(attempted_at) - min(attempted_at)) "
          + "FROM pgtask.task WHERE kind = 'demo.record'"));
      System.out.printf("rate limit: 200 starts over %.2f s, at most %d in any 1-s window%n", span, worstWindow);
      assertThat(worstWindow).as("most starts in any 1-s window (burst 5 + 20/s)").isLessThanOrEqualTo(25);
      assertThat(span).as("seconds from the first start to the last: at least (200 - 5) / 20")
          .isGreaterThanOrEqualTo(9.7);
      // on the 5-s polls alone, a bucket refilled to its burst of 5 between polls: 195 s
      assertThat(span).as("seconds from the first start to the last: the due timer, not the 5-s poll")
          .isLessThan(30.0);
      assertThat(sql.count("SELECT max(attempt) FROM pgtask.task WHERE kind = 'demo.record'"))
          .as("attempts: waiting for a token spends none").isEqualTo(1);
      Faults.assertEveryRecordTaskCompletedExactlyOnce(sql);
      Faults.stopAllAndAssertNoLocks(db, workers);
    } finally {
      Faults.closeAll(workers);
    }
  }
}
