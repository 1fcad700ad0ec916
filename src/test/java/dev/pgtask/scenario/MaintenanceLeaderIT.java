package dev.pgtask.scenario;

import static dev.pgtask.scenario.Faults.LEASE;
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
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * One elected worker runs the cluster's maintenance; when it dies (SIGKILL) or freezes (SIGSTOP)
 * another takes the lease within the documented bound (the holder's lease of three beats plus one
 * beat of the taker; with the test workers' 1-s rescue interval, a beat is 1 s) and runs the rescue
 * pass; a frozen leader that wakes up (SIGCONT) finds out at its next pass that it lost the lease
 * and runs no pass as leader.
 */
class MaintenanceLeaderIT {

  /** The test workers' beat (their rescue interval, below a third of their claim lease). */
  static final Duration BEAT = RESCUE;
  /** Documented takeover bound after the holder's last renewal: its lease (3 beats) + 1 beat. */
  static final Duration TAKEOVER = BEAT.multipliedBy(4);
  static final Pattern LEADS = Pattern.compile("pgtask worker (\\S+) leads maintenance \\(term (\\d+)");

  static TestDatabase db;
  static Db sql;

  @BeforeAll
  static void setUp() {
    db = TestDatabase.create("maintenance_leader");
    sql = new Db(db);
  }

  @AfterAll
  static void tearDown() {
    db.close();
  }

  @Test
  void aKilledOrFrozenLeaderIsReplacedWithinTheBoundAndAWokenLeaderRunsNoPass() throws Exception {
    List<WorkerProcess> workers = new ArrayList<>();
    Map<String, WorkerProcess> byId = new java.util.HashMap<>();
    try {
      // the first worker leads (alone); it also serves a queue of its own, whose task its death
      // leaves orphaned (nobody else serves that queue: the orphan stays rescued, not run again)
      List<String> aArgs = new ArrayList<>(List.of(Faults.args("leader-a")));
      aArgs.addAll(List.of("--queue", "solo", "--queue", "default"));
      WorkerProcess first = WorkerProcess.start(db, "leader-a", aArgs.toArray(String[]::new));
      workers.add(first);
      byId.put("leader-a", first);
      await("leader-a leads").atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(100)).ignoreExceptions()
          .until(() -> "leader-a".equals(liveLeader()));
      for (String id : List.of("leader-b", "leader-c")) {
        WorkerProcess w = WorkerProcess.start(db, id, Faults.args(id));
        workers.add(w);
        byId.put(id, w);
      }
      Faults.awaitUp(sql, "leader-b");
      Faults.awaitUp(sql, "leader-c");
      long orphan = Long.parseLong(sql.text("SELECT pgtask.enqueue('demo.record', '{\"ms\": 600000}', queue => 'solo')"));
      await("leader-a executing the long task").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50))
          .until(() -> Faults.executingOn(sql, "leader-a") == 1);
      assertThat(liveLeader()).as("the leader while three workers run").isEqualTo("leader-a");
      assertThat(sql.count("SELECT count(*) FROM pgtask.maintenance_leader")).as("rows of the leader view").isEqualTo(1);

      // SIGKILL of the leader: another takes the lease within the bound and rescues its task
      long term1 = sql.count("SELECT term FROM pgtask.maintenance_leader");
      double lastRenewal = renewedAt();
      first.kill();
      await("a new leader after SIGKILL").atMost(TAKEOVER.plus(SLACK)).pollInterval(Duration.ofMillis(50))
          .ignoreExceptions().until(() -> liveLeader() != null && !"leader-a".equals(liveLeader()));
      String second = liveLeader();
      double killTakeover = acquiredAt() - lastRenewal;
      double rescued = Faults.awaitRescued(sql, "leader-a", lastRenewal, LEASE.plus(RESCUE).plus(SLACK));
      await("the new leader logs the rescue").atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(100))
          .until(() -> byId.get(second).log().contains("rescued 1 task(s) of lost workers"));
      // nobody serves its queue any more: cancel the rescued orphan
      sql.exec("SELECT pgtask.cancel_task(" + orphan + ")");
      await("the rescued orphan cancelled").atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(100))
          .until(() -> "cancelled".equals(sql.text("SELECT state FROM pgtask.task WHERE id = " + orphan)));
      System.out.printf("maintenance leader: SIGKILL of leader-a -> %s took the lease %s after leader-a's last "
          + "renewal (bound %s); its orphan claimable again after %s%n", second, Faults.seconds(killTakeover),
          TAKEOVER, Faults.seconds(rescued));
      assertThat(sql.count("SELECT term FROM pgtask.maintenance_leader")).as("term after the takeover").isGreaterThan(term1);
      assertThat(killTakeover).as("seconds from the dead leader's last renewal to the takeover")
          .isLessThanOrEqualTo(TAKEOVER.plus(SLACK).toMillis() / 1000.0);

      // SIGSTOP of the new leader: the third worker takes over
      WorkerProcess frozen = byId.get(second);
      String third = "leader-b".equals(second) ? "leader-c" : "leader-b";
      double frozenRenewal = renewedAt();
      frozen.signal("STOP");
      await("a new leader after SIGSTOP").atMost(TAKEOVER.plus(SLACK)).pollInterval(Duration.ofMillis(50))
          .ignoreExceptions().until(() -> third.equals(liveLeader()));
      double stopTakeover = acquiredAt() - frozenRenewal;
      System.out.printf("maintenance leader: SIGSTOP of %s -> %s took the lease %s after its last renewal (bound %s)%n",
          second, third, Faults.seconds(stopTakeover), TAKEOVER);
      assertThat(stopTakeover).as("seconds from the frozen leader's last renewal to the takeover")
          .isLessThanOrEqualTo(TAKEOVER.plus(SLACK).toMillis() / 1000.0);

      // SIGCONT: the woken worker's first pass finds the lease taken, and it runs none as leader
      int logBefore = frozen.log().length();
      frozen.signal("CONT");
      await("the woken worker notices it lost the lease").atMost(Duration.ofSeconds(30))
          .pollInterval(Duration.ofMillis(100))
          .until(() -> frozen.log().substring(logBefore).contains("pgtask worker " + second + " no longer leads maintenance"));
      // over three of its beats, the lease stays with the third worker, in the same term
      double until = Faults.dbNow(sql) + BEAT.multipliedBy(3).toMillis() / 1000.0;
      while (Faults.dbNow(sql) < until) {
        assertThat(liveLeader()).as("the leader after the frozen worker woke up").isEqualTo(third);
        Thread.sleep(100); // sampling the lease row while the woken worker ticks, not waiting for a condition
      }
      String afterWake = frozen.log().substring(logBefore);
      assertThat(afterWake).as("the woken worker's log after SIGCONT")
          .doesNotContain("leads maintenance (term").doesNotContain("rescued");
      assertThat(Faults.listenerPid(sql, second)).as("the woken worker still runs (as a follower)").isNotNull();

      assertThat(sql.text("SELECT errors -> 0 ->> 'error' FROM pgtask.task WHERE id = " + orphan))
          .startsWith("worker lost: leader-a");

      // each term was led by one worker: the "leads" lines of all logs name distinct terms
      Map<Long, String> terms = new java.util.HashMap<>();
      for (WorkerProcess w : workers) {
        Matcher m = LEADS.matcher(w.log());
        while (m.find()) {
          String earlier = terms.put(Long.parseLong(m.group(2)), m.group(1));
          assertThat(earlier).as("another worker that logged leading term " + m.group(2)).isNull();
        }
      }
      // a leader stopping gives the lease up: the view shows it not live
      Faults.stopAllAndAssertNoLocks(db, workers);
      assertThat(sql.text("SELECT live FROM pgtask.maintenance_leader")).as("lease live after every worker stopped")
          .isEqualTo("f");
    } finally {
      for (WorkerProcess w : workers) {
        if (w.isAlive()) {
          w.signal("CONT");
        }
      }
      Faults.closeAll(workers);
    }
  }

  private static String liveLeader() throws Exception {
    return sql.text("SELECT worker FROM pgtask.maintenance_leader WHERE live");
  }

  private static double renewedAt() throws Exception {
    return Double.parseDouble(sql.text("SELECT extract(epoch FROM renewed_at) FROM pgtask.maintenance_leader"));
  }

  private static double acquiredAt() throws Exception {
    return Double.parseDouble(sql.text("SELECT extract(epoch FROM acquired_at) FROM pgtask.maintenance_leader"));
  }
}
