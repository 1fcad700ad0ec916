package dev.pgtask.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgtask.PgTaskWorker;
import dev.pgtask.internal.executor.Executor;
import dev.pgtask.spring.PgTaskProperties;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * One default shutdown timeout for the plain worker, {@code bin/pgtask worker} and Spring, and a
 * stop with it (the timeout plus the stop allowance, the bound {@code ShutdownBoundTest} proves)
 * ends inside Kubernetes' default termination grace period of 30 s.
 */
class ShutdownDefaultsTest {

  private static final Duration KUBERNETES_DEFAULT_GRACE = Duration.ofSeconds(30);

  @Test
  void theDefaultShutdownTimeoutIsOneEverywhereAndAStopWithItEndsInsideKubernetesDefaultGracePeriod() {
    assertThat(PgTaskWorker.DEFAULT_SHUTDOWN_TIMEOUT.plus(Executor.STOP_ALLOWANCE))
        .as("the longest stop with the default shutdown timeout").isLessThan(KUBERNETES_DEFAULT_GRACE);

    PgTaskWorker worker = PgTaskWorker.builder(new PGSimpleDataSource()).handler("test.noop", (ctx, p) -> { })
        .build();
    assertThat(worker.settings().shutdownTimeout()).as("a worker built without a shutdown timeout")
        .isEqualTo(PgTaskWorker.DEFAULT_SHUTDOWN_TIMEOUT);
    assertThat(new PgTaskProperties().getWorker().getShutdownTimeout()).as("Spring's pgtask.worker.shutdown-timeout")
        .isEqualTo(PgTaskWorker.DEFAULT_SHUTDOWN_TIMEOUT);
    CliRun help = CliRun.of("worker", "--help");
    assertThat(help.out()).as("bin/pgtask worker --help").contains("Default: 20s");
  }
}
