package dev.pgtask.scenario;

import static dev.pgtask.scenario.Faults.RESCUE;
import static dev.pgtask.scenario.Faults.SLACK;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

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
 * A worker frozen by SIGSTOP in the middle of a task, past its task timeout: the server-side
 * timeouts of the task transaction (task timeout + max(5 s, 10%)) end its session, so its row lock
 * and tenant lock go; the task is rescued and completed by another worker; after SIGCONT the zombie
 * commits nothing (fenced out, its connection gone) and goes back to work.
 */
class FrozenWorkerIT {

  /** Task timeout of the frozen worker; the server ends its idle transaction after this + 5 s. */
  static final Duration TASK_TIMEOUT = Duration.ofSeconds(2);
  static final Duration SERVER_TIMEOUT = TASK_TIMEOUT.plus(Duration.ofSeconds(5));

  static TestDatabase db;
  static Db sql;
  final List<WorkerProcess> workers = new ArrayList<>();

  @BeforeAll
  static void setUp() {
    db = TestDatabase.create("frozen_worker");
    sql = new Db(db);
  }

  @AfterAll
  static void tearDown() {
    db.close();
  }

  @Test
  void aWorkerFrozenPastItsTaskTimeoutLosesItsSessionItsTaskIsRescuedAndTheZombieCommitsNothing() throws Exception {
    try {
      // the task sleeps 1.5 s in its handler, inside its transaction: the freeze catches it there
      long taskId = Long.parseLong(sql.text(
          "SELECT pgtask.enqueue('demo.record', '{\"ms\": 1500}', tenant => 'frozen-tenant')"));
      // the zombie starts alone and leads maintenance: frozen, it loses the lease after two beats
      // (MaintenanceLeaderIT), and the rescuer takes it (ZombieRescuePassIT: frozen inside a pass)
      WorkerProcess zombie = WorkerProcess.start(db, "zombie",
          Faults.args("zombie", "--task-timeout", TASK_TIMEOUT.toMillis() + "ms"));
      workers.add(zombie);
      await("zombie executing the task").atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(20))
          .until(() -> Faults.executingOn(sql, "zombie") == 1);
      String backend = sql.text("SELECT backend_pid FROM pgtask.running WHERE task_id = " + taskId);
      zombie.signal("STOP");
      double frozenAt = Faults.dbNow(sql);

      WorkerProcess rescuer = WorkerProcess.start(db, "rescuer", Faults.args("rescuer"));
      workers.add(rescuer);

      // the server ends the frozen session: its locks go with it
      await("the server ends the frozen worker's task session").atMost(SERVER_TIMEOUT.plus(SLACK))
          .pollInterval(Duration.ofMillis(100))
          .until(() -> sql.count("SELECT count(*) FROM pg_stat_activity WHERE pid = " + backend) == 0);
      double sessionEnded = Faults.dbNow(sql) - frozenAt;
      // the rescuer's JVM start-up (seconds on a loaded machine) is no part of pgtask's recovery: the
      // bound counts from the freeze, less the time the rescuer took to start after it
      rescuer.awaitStarted(Duration.ofSeconds(60));
      double startUp = Math.max(0, Faults.dbNow(sql) - frozenAt - sessionEnded);
      double recovery = Faults.awaitRescued(sql, "zombie", frozenAt,
          SERVER_TIMEOUT.plus(RESCUE).plus(SLACK).plus(Duration.ofSeconds(60))) - startUp;
      await("the rescuer completes the task").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100))
          .until(() -> "completed".equals(sql.text("SELECT state FROM pgtask.task WHERE id = " + taskId)));
      System.out.printf("SIGSTOP: server ended the frozen session after %s, task claimable again after %s "
          + "(bound task timeout %s + max(5 s, 10%%) + rescue interval %s)%n", Faults.seconds(sessionEnded),
          Faults.seconds(recovery), TASK_TIMEOUT, RESCUE);

      zombie.signal("CONT");
      // the zombie wakes up past its deadline: its watchdog or its handler hits the dead connection,
      // and the fenced outcome matches no row. It then works again: stop the rescuer and feed it.
      assertThat(rescuer.terminate(Duration.ofSeconds(30))).as("rescuer exit code").isZero();
      sql.exec("SELECT pgtask.enqueue('demo.record', jsonb_build_object('after_wake', i)) FROM generate_series(1, 5) i");
      await("the woken zombie executes new tasks").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100))
          .ignoreExceptions()
          .until(() -> sql.count("SELECT count(*) FROM pgtask_demo.execution WHERE worker = 'zombie'") == 5);

      assertThat(sql.rows("SELECT worker || ' attempt ' || attempt FROM pgtask_demo.execution WHERE task_id = " + taskId))
          .as("committed executions of the frozen task: the rescuer's second attempt only")
          .containsExactly("rescuer attempt 2");
      assertThat(sql.text("SELECT errors -> 0 ->> 'error' FROM pgtask.task WHERE id = " + taskId))
          .as("the frozen attempt's entry").startsWith("worker lost: zombie");
      assertThat(sql.count("SELECT jsonb_array_length(errors) FROM pgtask.task WHERE id = " + taskId))
          .as("error entries of the frozen task (the zombie's late outcome was fenced out)").isEqualTo(1);
      assertThat(recovery).as("seconds from SIGSTOP to the task being claimable")
          .isLessThanOrEqualTo(SERVER_TIMEOUT.plus(RESCUE).plus(SLACK).toMillis() / 1000.0);
      Faults.awaitAllFinal(sql, Duration.ofSeconds(30));
      Faults.assertEveryRecordTaskCompletedExactlyOnce(sql);
      Faults.assertNoTenantOverlap(sql);
      Faults.stopAllAndAssertNoLocks(db, workers);
    } finally {
      for (WorkerProcess w : workers) {
        if (w.isAlive()) {
          w.signal("CONT");
        }
      }
      Faults.closeAll(workers);
    }
  }
}
