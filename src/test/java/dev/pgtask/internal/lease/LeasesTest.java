package dev.pgtask.internal.lease;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgtask.NewTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskOptions;
import dev.pgtask.internal.WorkerAccess;
import dev.pgtask.internal.WorkerConfig;
import dev.pgtask.internal.executor.LocalTask;
import dev.pgtask.internal.executor.UnitConfigs;
import dev.pgtask.internal.sql.ClaimQueries;
import dev.pgtask.internal.sql.Sql;
import dev.pgtask.testsupport.QueueDatabase;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link Leases}, the one writer of the leases of held tasks: a renewal extends the lease of an
 * attempt still running as this worker's claim (to the worker's lease from the database's now),
 * and of no other; its answer sets the renewed tasks' lease instant to when it was sent, turns a
 * cancel request into a stop request, and leaves a task it did not find alone (the durable check
 * says whether it is lost). On the listener's session, the answer is applied only by the step the
 * round runs after its commit.
 */
class LeasesTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("leases", 3);

  private WorkerConfig config;
  private Leases leases;

  @BeforeEach
  void setUp() throws Exception {
    queue.sql().exec("DELETE FROM pgtask.task; DELETE FROM pgtask.cancel_request");
    PgTaskWorker w = PgTaskWorker.builder(queue.pool()).concurrency(2).leaseDuration(Duration.ofSeconds(90))
        .handler("leases.k", (ctx, p) -> { }).build();
    config = WorkerAccess.config(w);
    leases = new Leases(config);
  }

  /** Claims {@code n} tasks as this worker, with a lease of a few seconds, as the claim hands them over. */
  private List<LocalTask> claim(int n) {
    for (int i = 0; i < n; i++) {
      queue.pgtask().enqueue(NewTask.of("leases.k", null, TaskOptions.defaults()));
    }
    long claimNanos = System.nanoTime();
    var claim = ClaimQueries.claimAvailable(queue.pool(), List.of("default"), List.of("leases.k"), n,
        config.workerId(), Duration.ofSeconds(5), false);
    assertThat(claim.tasks()).hasSize(n);
    return claim.tasks().stream().map(c -> UnitConfigs.claimed(c, config.workerId(), claimNanos)).toList();
  }

  private long leaseSecondsLeft(LocalTask t) throws Exception {
    return queue.sql().count("SELECT extract(epoch FROM lease_until - now())::bigint FROM pgtask.task WHERE id = " + t.id());
  }

  @Test
  void aRenewalExtendsOnlyTheAttemptsStillOursAndStopsTheCancelled() throws Exception {
    List<LocalTask> tasks = claim(3);
    LocalTask ours = tasks.get(0);
    LocalTask cancelled = tasks.get(1);
    LocalTask takenOver = tasks.get(2);
    queue.sql().exec("INSERT INTO pgtask.cancel_request (task_id, attempt) VALUES (" + cancelled.id() + ", "
        + cancelled.attempt() + ")");
    // rescued and claimed by another worker since
    queue.sql().exec("UPDATE pgtask.task SET owner = 'someone-else', attempt = attempt + 1 WHERE id = " + takenOver.id());
    long takenOverFrom = takenOver.leaseFromNanos();
    long before = System.nanoTime();

    Map<Long, Boolean> found = leases.fenceStart(tasks);

    assertThat(found).as("renewed, each with its cancel request")
        .isEqualTo(Map.of(ours.id(), false, cancelled.id(), true));
    assertThat(leaseSecondsLeft(ours)).as("the worker's lease, from now").isBetween(80L, 90L);
    assertThat(leaseSecondsLeft(cancelled)).as("a cancel request does not stop the renewal").isBetween(80L, 90L);
    assertThat(leaseSecondsLeft(takenOver)).as("another claim's lease is not touched").isLessThanOrEqualTo(5L);

    assertThat(ours.leaseFromNanos() - before).as("known ours as of the send").isGreaterThanOrEqualTo(0);
    assertThat(ours.stopReason()).isEqualTo(LocalTask.Stop.NONE);
    assertThat(cancelled.leaseFromNanos() - before).isGreaterThanOrEqualTo(0);
    assertThat(cancelled.stopReason()).isEqualTo(LocalTask.Stop.CANCELLED);
    assertThat(takenOver.leaseFromNanos()).as("not renewed: its lease instant stays").isEqualTo(takenOverFrom);
    assertThat(takenOver.stopReason()).as("a renewal's miss alone is no loss (the row may have been locked)")
        .isEqualTo(LocalTask.Stop.NONE);
  }

  @Test
  void aRenewalInTheSessionsRoundIsAppliedOnlyByTheStepAfterItsCommit() throws Exception {
    List<LocalTask> tasks = claim(1);
    LocalTask t = tasks.get(0);
    long claimedFrom = t.leaseFromNanos();

    Runnable afterCommit = Sql.using(queue.pool()).transactionResult(cfg -> leases.renewIn(DSL.using(cfg), tasks));

    assertThat(leaseSecondsLeft(t)).as("committed").isBetween(80L, 90L);
    assertThat(t.leaseFromNanos()).as("before the step runs").isEqualTo(claimedFrom);
    afterCommit.run();
    assertThat(t.leaseFromNanos() - claimedFrom).as("after the step").isPositive();
  }
}
