package dev.pgtask.scenario;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.TestDatabase;
import dev.pgtask.testsupport.WorkerProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A poison task ({@code demo.halt}: halts the JVM that runs it) crashes a worker on every attempt.
 * Each crash is a lost worker: the rescue pass counts the attempt, and after {@code max_attempts}
 * it discards the task instead of handing it out again. The other tasks all complete, exactly once.
 */
class PoisonTaskIT {

  static final int MAX_ATTEMPTS = 3;

  static TestDatabase db;
  static Db sql;

  @BeforeAll
  static void setUp() {
    db = TestDatabase.create("poison_task");
    sql = new Db(db);
  }

  @AfterAll
  static void tearDown() {
    db.close();
  }

  @Test
  void aTaskThatCrashesItsWorkerEveryTimeIsDiscardedAfterMaxAttemptsAndTheOthersComplete() throws Exception {
    Faults.enqueueRecords(sql, 80, 10, 300);
    long poison = Long.parseLong(sql.text(
        "SELECT pgtask.enqueue('demo.halt', max_attempts => " + MAX_ATTEMPTS + ", priority => -1)"));
    List<WorkerProcess> workers = new ArrayList<>();
    AtomicInteger crashes = new AtomicInteger();
    AtomicInteger started = new AtomicInteger();
    try {
      for (int i = 0; i < 2; i++) {
        String id = "poison-w" + started.getAndIncrement();
        workers.add(WorkerProcess.start(db, id, Faults.args(id)));
      }
      // the test loop restarts crashed workers until every task is final
      await("every task final, crashed workers restarted").atMost(Duration.ofSeconds(150))
          .pollInterval(Duration.ofMillis(200)).ignoreExceptions()
          .until(() -> {
            for (int i = 0; i < workers.size(); i++) {
              if (!workers.get(i).isAlive()) {
                crashes.incrementAndGet();
                String id = "poison-w" + started.getAndIncrement();
                workers.set(i, WorkerProcess.start(db, id, Faults.args(id)));
              }
            }
            return sql.count("SELECT count(*) FROM pgtask.task WHERE state IN ('available', 'retryable', 'running')") == 0;
          });
      System.out.printf("poison task: %d worker crash(es); its error history: %s%n", crashes.get(),
          sql.rows("SELECT e ->> 'attempt' || ': ' || (e ->> 'error') FROM pgtask.task t, jsonb_array_elements(t.errors) e "
              + "WHERE t.id = " + poison));

      assertThat(sql.text("SELECT state || ' after attempt ' || attempt FROM pgtask.task WHERE id = " + poison))
          .as("the poison task").isEqualTo("discarded after attempt " + MAX_ATTEMPTS);
      assertThat(Faults.workerLostEntries(sql, poison)).as("'worker lost' entries of the poison task")
          .isEqualTo(MAX_ATTEMPTS);
      assertThat(crashes.get()).as("workers crashed by the poison task").isEqualTo(MAX_ATTEMPTS);
      assertThat(sql.count("SELECT count(*) FROM pgtask.task WHERE state = 'discarded'")).as("discarded tasks").isEqualTo(1);
      Faults.assertEveryRecordTaskCompletedExactlyOnce(sql);
      Faults.assertNoTenantOverlap(sql);
      Faults.stopAllAndAssertNoLocks(db, workers);
    } finally {
      Faults.closeAll(workers);
    }
  }
}
