package dev.pgtask.cli;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The worker options the fault-injection suite needs: lease, rescue interval, shutdown timeout. */
class WorkerFaultOptionsTest {

  @Test
  void helpListsLeaseRescueAndShutdownOptions() {
    CliRun run = CliRun.of("worker", "--help");
    assertThat(run.exitCode()).isZero();
    assertThat(run.out()).contains("--lease-duration", "--rescue-interval", "--shutdown-timeout");
  }

  @Test
  void aZeroLeaseIsAUsageErrorBeforeConnecting() {
    CliRun run = CliRun.of("worker", "--url", "jdbc:postgresql://127.0.0.1:1/nowhere", "--demo-handlers",
        "--lease-duration", "0s");
    assertThat(run.exitCode()).isEqualTo(ExitCodes.USAGE);
    assertThat(run.errLines()).singleElement().asString().contains("leaseDuration must be positive");
  }

  @Test
  void aBadRescueIntervalIsAUsageErrorOnOneLine() {
    CliRun run = CliRun.of("worker", "--rescue-interval", "often", "--demo-handlers");
    assertThat(run.exitCode()).isEqualTo(ExitCodes.USAGE);
    assertThat(run.errLines()).singleElement().asString().contains("--rescue-interval").contains("'often'");
  }
}
