package dev.pgtask.cli;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The worker command's checks that need no running worker. */
class WorkerCommandTest {

  @Test
  void aBadDurationIsAUsageErrorOnOneLine() {
    CliRun run = CliRun.of("worker", "--poll-interval", "soon", "--demo-handlers");
    assertThat(run.exitCode()).isEqualTo(ExitCodes.USAGE);
    assertThat(run.errLines()).singleElement().asString()
        .contains("--poll-interval")
        .contains("'soon' is not a duration");
  }

  @Test
  void anInvalidConcurrencyIsAUsageErrorBeforeConnecting() {
    CliRun run = CliRun.of("worker", "--url", "jdbc:postgresql://127.0.0.1:1/nowhere", "--demo-handlers",
        "--concurrency", "0");
    assertThat(run.exitCode()).isEqualTo(ExitCodes.USAGE);
    assertThat(run.errLines()).singleElement().asString().contains("concurrency must be 1..1000, was 0");
  }

  @Test
  void withoutHandlersItSaysWhatToAdd() {
    CliRun run = CliRun.of("worker", "--url", "jdbc:postgresql://127.0.0.1:1/nowhere");
    assertThat(run.exitCode()).isEqualTo(ExitCodes.USAGE);
    assertThat(run.errLines()).singleElement().asString().contains("--demo-handlers");
  }

  @Test
  void anUnreachableServerExitsThree() {
    CliRun run = CliRun.of("worker", "--url", "jdbc:postgresql://127.0.0.1:1/nowhere", "--demo-handlers");
    assertThat(run.exitCode()).isEqualTo(ExitCodes.CANNOT_CONNECT);
    assertThat(run.errLines()).singleElement().asString().startsWith("pgtask worker: cannot connect");
  }

  @Test
  void helpListsTheLauncherSurface() {
    CliRun run = CliRun.of("worker", "--help");
    assertThat(run.exitCode()).isZero();
    assertThat(run.out()).contains("--url", "--queue", "--concurrency", "--batch-size", "--poll-interval",
        "--task-timeout", "--demo-handlers");
  }
}
