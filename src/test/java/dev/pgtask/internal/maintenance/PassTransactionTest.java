package dev.pgtask.internal.maintenance;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgtask.PgTaskWorker;
import dev.pgtask.internal.WorkerAccess;
import dev.pgtask.internal.WorkerConfig;
import dev.pgtask.internal.WorkerRuntime;
import dev.pgtask.internal.sql.Sql;
import dev.pgtask.testsupport.QueueDatabase;
import java.sql.Connection;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;
import org.jooq.DSLContext;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The one transaction of every maintenance pass ({@link PassTransaction}): bounded on the server
 * from its first statement, the pass's lock, the lease's turn for the leader's passes, the pass,
 * commit, then the after-commit step, and only when the pass ran and committed.
 */
class PassTransactionTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("pass_transaction", 4);

  @BeforeEach
  void clean() throws Exception {
    queue.sql().exec("DELETE FROM pgtask.task");
    queue.sql().exec("DELETE FROM pgtask.worker");
    queue.sql().exec("UPDATE pgtask.maintenance_lease SET holder = NULL, lease_until = '-infinity'");
  }

  private static WorkerConfig config(String workerId) {
    PgTaskWorker w = PgTaskWorker.builder(queue.pool()).workerId(workerId).concurrency(1)
        .handler("test.task", (c, p) -> { }).build();
    WorkerConfig c = WorkerAccess.config(w);
    return c.withTenantLockNamespace(WorkerRuntime.readLockNamespace(c.dataSource()));
  }

  /** Counts its runs and its after-commit steps; {@code lock} is its pass lock. */
  private static final class Counting implements PassStatements<Integer> {
    final PassLock lock;
    final AtomicInteger runs = new AtomicInteger();
    final AtomicInteger committed = new AtomicInteger();

    Counting(PassLock lock) {
      this.lock = lock;
    }

    @Override
    public PassLock lock() {
      return lock;
    }

    @Override
    public Integer run(DSLContext tx) {
      return runs.incrementAndGet();
    }

    @Override
    public void committed(Integer result, Executor onPool) {
      committed.incrementAndGet();
    }
  }

  @Test
  void aLeadersPassRunsOnlyOnTheWorkerThatHoldsTheLeaseAndItsAfterCommitStepOnlyWhenItRan() {
    LeaderLease leaseA = new LeaderLease(config("pt-a"), () -> { });
    LeaderLease leaseB = new LeaderLease(config("pt-b"), () -> { });
    PassTransaction a = new PassTransaction(config("pt-a"), leaseA);
    PassTransaction b = new PassTransaction(config("pt-b"), leaseB);
    a.onPool(PassTransaction.Fence.BEAT, null); // a's tick takes the free lease
    assertThat(leaseA.leads()).as("a leads after its tick").isTrue();

    Counting pass = new Counting(PassLock.RETENTION);
    assertThat(b.onPool(PassTransaction.Fence.LEADER, pass)).as("b's result as a follower").isNull();
    assertThat(leaseB.leads()).as("b leads").isFalse();
    assertThat(pass.runs.get()).as("runs on the follower").isZero();
    assertThat(pass.committed.get()).as("after-commit steps on the follower").isZero();

    assertThat(a.onPool(PassTransaction.Fence.LEADER, pass)).as("a's result as the leader").isEqualTo(1);
    assertThat(pass.committed.get()).as("after-commit steps once the leader's pass ran").isEqualTo(1);
    assertThat(b.onPool(PassTransaction.Fence.ANY, pass)).as("the pass on demand on the follower").isEqualTo(2);
  }

  @Test
  void aPassWhoseLockAnotherTransactionHoldsDoesNotRunUntilThatTransactionEnds() throws Exception {
    WorkerConfig config = config("pt-lock");
    PassTransaction tx = new PassTransaction(config, new LeaderLease(config, () -> { }));
    Counting pass = new Counting(PassLock.RESCUE);
    try (Connection holder = queue.database().connect(); Statement st = holder.createStatement()) {
      holder.setAutoCommit(false);
      st.execute("SELECT pg_advisory_xact_lock(" + config.tenantLockNamespace() + ", " + PassLock.RESCUE.key + ")");
      assertThat(tx.onPool(PassTransaction.Fence.ANY, pass)).as("result while another pass holds the lock").isNull();
      assertThat(pass.runs.get()).as("runs while the lock is held").isZero();
      holder.commit();
    }
    assertThat(tx.onPool(PassTransaction.Fence.ANY, pass)).as("result once the lock is free").isEqualTo(1);
    assertThat(pass.committed.get()).isEqualTo(1);
  }

  @Test
  void aPassThatFailsLeavesNothingBehindAndRunsNoAfterCommitStep() throws Exception {
    WorkerConfig config = config("pt-fail");
    PassTransaction tx = new PassTransaction(config, new LeaderLease(config, () -> { }));
    AtomicInteger committed = new AtomicInteger();
    PassStatements<Integer> failing = new PassStatements<>() {
      @Override
      public Integer run(DSLContext t) {
        t.execute("SELECT pgtask.enqueue('test.task')");
        throw new IllegalStateException("the pass failed after a write");
      }

      @Override
      public void committed(Integer result, Executor onPool) {
        committed.incrementAndGet();
      }
    };
    assertThatThrownBy(() -> tx.onPool(PassTransaction.Fence.ANY, failing)).hasMessageContaining("the pass failed");
    assertThat(queue.sql().count("SELECT count(*) FROM pgtask.task")).as("tasks the failed pass left").isZero();
    assertThat(committed.get()).as("after-commit steps of the failed pass").isZero();
  }

  @Test
  void aPassRunsUnderTheServerSideBoundsAndWithoutSequentialScansFromItsFirstStatement() {
    WorkerConfig config = config("pt-bounds");
    PassTransaction tx = new PassTransaction(config, new LeaderLease(config, () -> { }));
    PassStatements<List<String>> settings = new PassStatements<>() {
      @Override
      public PassLock lock() {
        return PassLock.RETENTION;
      }

      @Override
      public List<String> run(DSLContext t) {
        return t.fetch("SELECT name || '=' || setting FROM pg_settings WHERE name IN ('statement_timeout', "
            + "'lock_timeout', 'idle_in_transaction_session_timeout', 'enable_seqscan', 'jit') ORDER BY name")
            .getValues(0, String.class);
      }
    };
    long bound = config.transactionBounds().idle().toMillis();
    assertThat(tx.onPool(PassTransaction.Fence.ANY, settings)).as("the pass's settings").containsExactly(
        "enable_seqscan=off", "idle_in_transaction_session_timeout=" + bound, "jit=off",
        "lock_timeout=" + config.transactionBounds().lock().toMillis(),
        "statement_timeout=" + config.transactionBounds().statement().toMillis());
  }

  @Test
  void aTickOnTheListenersSessionHandsWhatNeedsThePoolToTheMaintenanceThread() throws Exception {
    WorkerConfig config = config("pt-session"); // no worker row: the tick's turn finds it gone
    AtomicInteger registered = new AtomicInteger();
    LeaderLease lease = new LeaderLease(config, registered::incrementAndGet);
    PassTransaction tx = new PassTransaction(config, lease);
    List<Runnable> handedOff = new ArrayList<>();
    Runnable committed;
    try (Connection session = queue.pool().getConnection()) {
      config.transactionBounds().begin(session);
      committed = tx.onSession(Sql.using(session), PassTransaction.Fence.BEAT, null, handedOff::add);
      session.commit();
      session.setAutoCommit(true);
    }
    committed.run();
    assertThat(lease.leads()).as("the session's tick took the free lease").isTrue();
    assertThat(registered.get()).as("registrations on the listener's thread").isZero();
    assertThat(handedOff).as("work handed to the maintenance thread").hasSize(1);
    handedOff.get(0).run();
    assertThat(registered.get()).as("registrations once the maintenance thread ran the hand-off").isEqualTo(1);
  }
}
