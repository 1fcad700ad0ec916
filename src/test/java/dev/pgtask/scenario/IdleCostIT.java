package dev.pgtask.scenario;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgtask.bench.IdleCost;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * An idle worker costs the server its poll and its heartbeat, at most 0.4 transactions per second
 * (issue 15), and the cluster's maintenance costs the same for any number of workers (one elected
 * worker runs it). Measured: transactions ended per second (commits and rollbacks) in the workers'
 * database with 1 and with 4 idle worker processes at the default settings (docs/benchmarks.md,
 * "Idle cost"): the poll every 5 s and the tick every 10 s on the listener's own session, one
 * transaction for both when they fall together, no pool check, no ping. Before: 1.4 to 1.6 per
 * worker (an empty poll rolled back the head transaction it had opened, the pool checked its
 * connection before each poll and each tick, the listener pinged every 10 s); before the elected
 * leader, every worker ran every pass: 2.7.
 */
class IdleCostIT {

  /** The bound per idle worker, maintenance included (one worker is also the leader). */
  static final double PER_WORKER = 0.4;

  @Test
  void anIdleWorkerCostsAtMostPointFourTransactionsPerSecondWithOneAndWithFourWorkers() throws Exception {
    // both at once, each on a database of its own: an idle worker's transactions are counted in its
    // database and do not depend on the machine's load, so the two windows may overlap
    java.util.concurrent.CompletableFuture<IdleCost.Result> oneWorker = java.util.concurrent.CompletableFuture.supplyAsync(
        () -> measure(1));
    IdleCost.Result four = measure(4);
    IdleCost.Result one = oneWorker.get(5, java.util.concurrent.TimeUnit.MINUTES);
    double marginal = (four.perSecond() - one.perSecond()) / 3;
    System.out.printf("idle cost: %s; %s; each worker beyond the first: %.2f/s%n", one, four, marginal);
    assertThat(one.perWorkerPerSecond()).as("transactions/s of one idle worker, the cluster's maintenance included")
        .isLessThanOrEqualTo(PER_WORKER);
    assertThat(four.perWorkerPerSecond()).as("transactions/s per idle worker, 4 workers")
        .isLessThanOrEqualTo(PER_WORKER);
    assertThat(marginal).as("transactions/s each idle worker beyond the first adds (its maintenance is not its own)")
        .isLessThanOrEqualTo(PER_WORKER);
  }

  private static IdleCost.Result measure(int workers) {
    try {
      return IdleCost.measure(workers, Duration.ofSeconds(15), Duration.ofSeconds(40));
    } catch (Exception e) {
      throw new IllegalStateException("measuring " + workers + " idle worker(s)", e);
    }
  }
}
