package dev.pgtask.scenario;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgtask.bench.IdleCost;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * Idle workers cost the server their poll, their heartbeat and their listener's ping, and the
 * cluster's maintenance costs the same for any number of workers (one elected worker runs it).
 * Measured: transactions per second in the workers' database with 1 and with 4 idle worker
 * processes at the default settings (docs/benchmarks.md, "Idle cost"). Before the elected leader,
 * every worker ran every pass: 2.7 transactions/s per worker. The bounds are generous (a loaded
 * CI machine, statistics flushed late by idle sessions); the figures are in docs/benchmarks.md.
 */
class IdleCostIT {

  /**
   * Generous bound per idle worker, well below the 2.7 of every worker running every pass: measured
   * 0.6 to 0.9 with the default HikariCP pool on the leader's branch, 1.2 to 1.35 on the merged code
   * of 2026-12-01 (the schedules' backstop and pool validations included).
   */
  static final double PER_WORKER = 1.6;

  @Test
  void anIdleWorkerCostsItsPollAndHeartbeatAndMaintenanceDoesNotGrowWithTheCluster() throws Exception {
    IdleCost.Result one = IdleCost.measure(1, Duration.ofSeconds(15), Duration.ofSeconds(40));
    IdleCost.Result four = IdleCost.measure(4, Duration.ofSeconds(15), Duration.ofSeconds(40));
    double marginal = (four.perSecond() - one.perSecond()) / 3;
    System.out.printf("idle cost: %s; %s; each worker beyond the first: %.2f/s%n", one, four, marginal);
    assertThat(one.perSecond()).as("transactions/s of one idle worker, maintenance included").isLessThan(PER_WORKER + 0.5);
    assertThat(four.perWorkerPerSecond()).as("transactions/s per idle worker, 4 workers").isLessThan(PER_WORKER);
    assertThat(marginal).as("transactions/s each idle worker beyond the first adds (its maintenance is not its own)")
        .isLessThan(PER_WORKER);
  }
}
