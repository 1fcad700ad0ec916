package dev.pgtask.scenario;

import static dev.pgtask.scenario.Faults.LEASE;
import static dev.pgtask.scenario.Faults.RESCUE;
import static dev.pgtask.scenario.Faults.SLACK;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.FreezingProxy;
import dev.pgtask.testsupport.TestDatabase;
import dev.pgtask.testsupport.WorkerProcess;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A worker's LISTEN session goes through a proxy that freezes it the way a frozen pooler or a
 * network black hole does: one message swallowed, then nothing forwarded either way, both sockets
 * open (the server's backend lives on, idle, possibly inside a round's transaction). Every
 * transaction on that session is bounded on the server (statement, lock and idle-in-transaction
 * timeouts: with the test workers' 1-s beat, 1 s each), so rescue, leadership and the worker's own
 * tasks go on within the documented bounds, and the listener ends the backend of a session it gave
 * up on.
 */
class FrozenListenSessionIT {

  /** The test workers' short-transaction bound (their beat, 1 s). */
  static final Duration BOUND = RESCUE;
  /** The documented takeover bound: the leader's lease (3 beats) + 1 beat. */
  static final Duration TAKEOVER = RESCUE.multipliedBy(4);

  static TestDatabase db;
  static Db sql;
  FreezingProxy proxy;
  final List<WorkerProcess> workers = new ArrayList<>();

  @BeforeAll
  static void setUp() {
    db = TestDatabase.create("frozen_listen");
    sql = new Db(db);
  }

  @AfterAll
  static void tearDown() {
    db.close();
  }

  @BeforeEach
  void startProxy() throws Exception {
    URI u = URI.create(db.fullUrl().substring("jdbc:".length()));
    proxy = FreezingProxy.to(u.getHost(), u.getPort() < 0 ? 5432 : u.getPort());
  }

  @AfterEach
  void stop() throws Exception {
    Faults.closeAll(workers);
    workers.clear();
    proxy.close();
    // what a test left behind (its frozen backends included) is not the next test's
    sql.exec("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() "
        + "AND pid <> pg_backend_pid()");
    sql.exec("DELETE FROM pgtask.task");
  }

  /**
   * The test database's URL through the proxy; no statement prepared on the server, so that every
   * statement's text (COMMIT included) goes over the wire each time and the proxy can see it.
   */
  String proxied() {
    URI u = URI.create(db.fullUrl().substring("jdbc:".length()));
    return "jdbc:postgresql://127.0.0.1:" + proxy.port() + u.getRawPath() + "?"
        + (u.getRawQuery() == null ? "" : u.getRawQuery() + "&") + "prepareThreshold=0";
  }

  WorkerProcess start(String id, boolean viaProxy, String... extra) throws Exception {
    List<String> args = new ArrayList<>(List.of(extra));
    if (viaProxy) {
      args.addAll(List.of("--listen-url", proxied()));
    }
    WorkerProcess w = WorkerProcess.start(db, id, Faults.args(id, args.toArray(String[]::new)));
    workers.add(w);
    return w;
  }

  static String liveLeader() throws Exception {
    return sql.text("SELECT worker FROM pgtask.maintenance_leader WHERE live");
  }

  /** Backends of this database idle in a transaction for longer than {@code seconds}. */
  static long idleInTransactionLongerThan(double seconds) throws Exception {
    return sql.count("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        + "AND state LIKE 'idle in transaction%' AND clock_timestamp() - state_change > make_interval(secs => " + seconds + ")");
  }

  @Test
  void aDeadLeadersTasksAreRescuedWithinTheBoundAlthoughTheSurvivorsListenSessionFroze() throws Exception {
    // the victim leads and runs 4 long tasks of a queue only it serves; the survivor's LISTEN
    // session goes through the proxy
    WorkerProcess victim = start("fz-a-victim", false, "--queue", "victim");
    await("fz-a-victim leads").atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(100)).ignoreExceptions()
        .until(() -> "fz-a-victim".equals(liveLeader()));
    start("fz-a-survivor", true);
    Faults.awaitUp(sql, "fz-a-victim");
    Faults.awaitUp(sql, "fz-a-survivor");
    sql.exec("SELECT pgtask.enqueue('demo.record', '{\"ms\": 600000}', queue => 'victim') FROM generate_series(1, 4)");
    await("the victim executing its 4 tasks").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50))
        .until(() -> Faults.executingOn(sql, "fz-a-victim") == 4);

    // the survivor's next tick round (it binds the worker id: its heartbeat) freezes at its COMMIT
    String frozenPid = Faults.listenerPid(sql, "fz-a-survivor");
    proxy.freezeAtCommit("fz-a-survivor");
    await("the survivor's round frozen").atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20))
        .until(() -> proxy.frozenCount() == 1);
    double death = Faults.dbNow(sql);
    victim.kill();

    Duration bound = LEASE.plus(RESCUE).compareTo(TAKEOVER) > 0 ? LEASE.plus(RESCUE) : TAKEOVER;
    double rescued = Faults.awaitRescued(sql, "fz-a-victim", death, bound.plus(SLACK));
    System.out.printf("frozen listen session: the dead leader's tasks claimable again %s after its death (bound %s)%n",
        Faults.seconds(rescued), bound);
    assertThat(rescued).as("seconds from the death to the rescue, with the survivor's LISTEN session frozen")
        .isLessThanOrEqualTo(bound.plus(SLACK).toMillis() / 1000.0);
    await("the frozen backend ended by its idle bound").atMost(BOUND.plus(SLACK)).pollInterval(Duration.ofMillis(100))
        .until(() -> sql.count("SELECT count(*) FROM pg_stat_activity WHERE pid = " + frozenPid) == 0);
    assertThat(idleInTransactionLongerThan(BOUND.toMillis() / 1000.0 + 1))
        .as("backends idle in a transaction past the bound").isZero();
    assertThat(liveLeader()).as("the leader after the freeze").isEqualTo("fz-a-survivor");
  }

  @Test
  void aWorkerThatTookTheLeaseInAFrozenRoundLeavesTheClusterLedAndAnOrphanIsRescued() throws Exception {
    WorkerProcess leader = start("fz-b-leader", false);
    await("fz-b-leader leads").atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(100)).ignoreExceptions()
        .until(() -> "fz-b-leader".equals(liveLeader()));
    start("fz-b-follower", true);
    Faults.awaitUp(sql, "fz-b-follower");
    Faults.awaitUp(sql, "fz-b-leader");

    // the leader freezes (SIGSTOP); once its lease has run out, the follower's next tick round takes
    // the lease, and that round freezes at its COMMIT
    leader.signal("STOP");
    await("the frozen leader's lease expired").atMost(TAKEOVER.plus(SLACK)).pollInterval(Duration.ofMillis(10))
        .until(() -> sql.count("SELECT count(*) FROM pgtask.maintenance_lease WHERE lease_until < clock_timestamp()") == 1);
    proxy.freezeAtCommit("fz-b-follower");
    await("the follower's round frozen").atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20))
        .until(() -> proxy.frozenCount() == 1);
    double frozenAt = Faults.dbNow(sql);
    // an orphan of a worker that is gone: running, its lease expired, no transaction holds it
    long orphan = Long.parseLong(sql.text("SELECT pgtask.enqueue('demo.record', '{\"ms\": 1}', queue => 'nobody')"));
    sql.exec("UPDATE pgtask.task SET state = 'running', attempt = 1, owner = 'fz-b-ghost', attempted_at = now(), "
        + "lease_until = now() - interval '1 second' WHERE id = " + orphan);
    // a fresh worker joins: it must be able to lead if it comes to that
    start("fz-b-fresh", false);

    await("the orphan rescued").atMost(TAKEOVER.plus(SLACK)).pollInterval(Duration.ofMillis(100))
        .until(() -> !"running".equals(sql.text("SELECT state FROM pgtask.task WHERE id = " + orphan)));
    double rescued = Faults.dbNow(sql) - frozenAt;
    String now = liveLeader();
    System.out.printf("lease taken in a frozen round: orphan rescued %s after the freeze (bound %s), leader then %s%n",
        Faults.seconds(rescued), TAKEOVER, now);
    assertThat(now).as("a live leader after the freeze").isIn("fz-b-follower", "fz-b-fresh");
    assertThat(idleInTransactionLongerThan(BOUND.toMillis() / 1000.0 + 1))
        .as("backends idle in a transaction past the bound").isZero();
    leader.signal("CONT");
  }

  @Test
  void listenerReconnectsDoNotAccumulateBackends() throws Exception {
    WorkerProcess w = start("fz-c", true);
    Faults.awaitUp(sql, "fz-c");
    String[] freezes = {"COMMIT", "LISTEN pgtask_control", "COMMIT", "LISTEN pgtask_control"};
    for (int i = 0; i < freezes.length; i++) {
      if (freezes[i].equals("COMMIT")) {
        proxy.freezeAtCommit("fz-c");
      } else {
        proxy.freezeAt(freezes[i]);
      }
      int n = i + 1;
      await("freeze " + n + " at " + freezes[i]).atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(20))
          .until(() -> proxy.frozenCount() == n);
    }
    // the listener gives the last frozen session up (network timeout) and listens again (a session
    // frozen at its LISTEN never listened: it counts no reconnect)
    await("the listener reconnected after the last freeze").atMost(Duration.ofSeconds(30))
        .pollInterval(Duration.ofMillis(100))
        .until(() -> w.log().split("pgtask listener reconnected", -1).length - 1 >= freezes.length / 2);
    await("one LISTEN backend left").atMost(BOUND.plus(SLACK)).pollInterval(Duration.ofMillis(100))
        .until(() -> sql.count("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            + "AND application_name = 'pgtask listen fz-c'") == 1);
    System.out.printf("listener reconnects: %d freezes, backends of the worker's LISTEN sessions now %d%n",
        freezes.length, sql.count("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            + "AND application_name = 'pgtask listen fz-c'"));
    assertThat(sql.count("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        + "AND wait_event_type = 'Lock'")).as("backends waiting on a lock").isZero();
    assertThat(idleInTransactionLongerThan(BOUND.toMillis() / 1000.0 + 1))
        .as("backends idle in a transaction past the bound").isZero();
  }
}
