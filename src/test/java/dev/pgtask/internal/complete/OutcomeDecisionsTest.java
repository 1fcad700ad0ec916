package dev.pgtask.internal.complete;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgtask.DiscardTaskException;
import dev.pgtask.RetryTaskException;
import dev.pgtask.SnoozeTaskException;
import dev.pgtask.internal.executor.LocalTask;
import dev.pgtask.internal.executor.UnitConfigs;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/**
 * {@link Outcomes} is the one place that decides how an attempt ended; these are its decisions,
 * without a database: what each thing a handler throws, and each stop request, means for the task.
 */
class OutcomeDecisionsTest {

  private final Outcomes outcomes = new Outcomes(
      UnitConfigs.config(4, 10, 0, Duration.ofSeconds(1), Duration.ofMinutes(10)));

  @Test
  void aSnoozeDoesNotFailTheAttemptAndKeepsItsDelay() {
    Outcome o = outcomes.ofFailure(UnitConfigs.task(1, 3), new SnoozeTaskException(Duration.ofSeconds(42)));
    assertThat(o).isEqualTo(new Outcome.Snoozed(Duration.ofSeconds(42)));
    assertThat(o.name()).isEqualTo("snoozed");
  }

  @Test
  void aDiscardEndsTheTaskWhateverAttemptsAreLeft() {
    Outcome o = outcomes.ofFailure(UnitConfigs.task(1, 1), new DiscardTaskException("bad input"));
    assertThat(o).isInstanceOfSatisfying(Outcome.Failed.class, f -> {
      assertThat(f.discard()).isTrue();
      assertThat(f.error()).contains("bad input");
    });
    assertThat(o.name()).isEqualTo("discarded");
  }

  @Test
  void aRetryRequestKeepsTheHandlersDelayOrInstantInsteadOfTheBackoff() {
    Outcome delayed = outcomes.ofFailure(UnitConfigs.task(1, 5), new RetryTaskException(Duration.ofMillis(1234), "rate limited"));
    assertThat(delayed).isInstanceOfSatisfying(Outcome.Failed.class, f -> {
      assertThat(f.retryDelay()).isEqualTo(Duration.ofMillis(1234));
      assertThat(f.retryAt()).isNull();
      assertThat(f.discard()).isFalse();
    });
    Instant at = Instant.parse("2030-01-01T00:00:00Z");
    Outcome atInstant = outcomes.ofFailure(UnitConfigs.task(1, 5), RetryTaskException.at(at, "after the window"));
    assertThat(atInstant).isInstanceOfSatisfying(Outcome.Failed.class, f -> {
      assertThat(f.retryAt()).isEqualTo(at);
      assertThat(f.retryDelay()).isEqualTo(Duration.ZERO);
    });
    assertThat(delayed.name()).isEqualTo("retried");
  }

  @Test
  void anyOtherThrowableIncludingAnErrorFailsTheAttemptWithTheBackoffOfItsAttempt() {
    for (Throwable thrown : new Throwable[] {new IllegalStateException("boom"), new OutOfMemoryError("heap")}) {
      Outcome o = outcomes.ofFailure(UnitConfigs.task(1, 3), thrown);
      assertThat(o).isInstanceOfSatisfying(Outcome.Failed.class, f -> {
        assertThat(f.discard()).isFalse();
        assertThat(f.error()).startsWith(thrown.getClass().getName()).contains(thrown.getMessage());
        // attempt 3: 1 s * 2^2 = 4 s, jitter ±10%
        assertThat(f.retryDelay()).isBetween(Duration.ofMillis(3600), Duration.ofMillis(4400));
      });
    }
  }

  @Test
  void theBackoffDoublesPerAttemptWithinTenPercentAndNeverPassesItsCapOrOverflows() {
    for (int attempt = 1; attempt <= 12; attempt++) {
      long expected = Math.min(600_000L, 1000L << (attempt - 1));
      for (int i = 0; i < 50; i++) {
        long got = outcomes.backoff(attempt).toMillis();
        assertThat(got).as("attempt %d", attempt).isBetween(expected - expected / 10, expected + expected / 10);
      }
    }
    for (int attempt : new int[] {40, 61, 62, 63, 64, 1_000, Integer.MAX_VALUE}) {
      assertThat(outcomes.backoff(attempt)).as("attempt %d", attempt)
          .isBetween(Duration.ofMillis(540_000), Duration.ofMillis(660_000));
    }
  }

  @Test
  void eachStopRequestHasItsOwnOutcomeAndOnlyATimeoutSpendsTheAttempt() {
    LocalTask t = UnitConfigs.task(7, 2);
    assertThat(outcomes.ofStop(t, LocalTask.Stop.CANCELLED)).isInstanceOf(Outcome.Cancelled.class);
    assertThat(outcomes.ofStop(t, LocalTask.Stop.SHUTDOWN)).isInstanceOf(Outcome.Released.class);
    assertThat(outcomes.ofStop(t, LocalTask.Stop.LOST)).isInstanceOf(Outcome.Lost.class);
    assertThat(outcomes.ofStop(t, LocalTask.Stop.TIMED_OUT)).isInstanceOfSatisfying(Outcome.Failed.class, f -> {
      assertThat(f.discard()).isFalse();
      assertThat(f.error()).isEqualTo("timed out after 300000 ms");
    });
    assertThatThrownBy(() -> outcomes.ofStop(t, LocalTask.Stop.NONE)).isInstanceOf(IllegalStateException.class);
  }

  @Test
  void anErrorMessageNamesItsSqlStateAndIsCutAtTwoThousandCharacters() {
    String described = Outcomes.describe(new SQLException("duplicate key", "23505"));
    assertThat(described).isEqualTo("java.sql.SQLException: duplicate key (SQLSTATE 23505)");
    String longOne = Outcomes.describe(new IllegalArgumentException("x".repeat(5_000)));
    assertThat(longOne).hasSize(2_001).endsWith("…");
  }
}
