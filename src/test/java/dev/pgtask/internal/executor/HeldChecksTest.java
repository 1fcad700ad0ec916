package dev.pgtask.internal.executor;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgtask.CancelResult;
import dev.pgtask.NewTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskOptions;
import dev.pgtask.internal.WorkerAccess;
import dev.pgtask.internal.WorkerStats;
import dev.pgtask.internal.complete.OutcomeWriter;
import dev.pgtask.internal.complete.Outcomes;
import dev.pgtask.internal.sql.HeldQueries;
import dev.pgtask.internal.sql.ClaimQueries;
import dev.pgtask.internal.sql.Fence;
import dev.pgtask.internal.sql.HeldQueries.Held;
import dev.pgtask.internal.sql.HeldQueries.HeldState;
import dev.pgtask.internal.sql.Sql;
import dev.pgtask.testsupport.QueueDatabase;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.jooq.JSONB;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What a worker reads about the tasks it holds (rescued, cancelled) is about one attempt. A
 * worker can hold a task again as its next attempt while a check of the earlier attempt is on its
 * way: the earlier attempt was rescued (its session was terminated, say) and claimed again by the
 * same worker. The check's answer about the earlier attempt must not stop the new one
 * (TerminateBackendIT saw it: the new attempt was stopped as "no longer this worker's", never
 * started, and rescued again when its lease ran out).
 */
class HeldChecksTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("heldchecks", 3);

  private static ClaimQueries.Claimed claimed(long id, int attempt) {
    return new ClaimQueries.Claimed(id, "held.k", "default", JSONB.valueOf("{}"), 7, "t", attempt, 25,
        Instant.now(), Instant.now(), null);
  }

  @Test
  void anAnswerAboutAnEarlierAttemptDoesNotStopTheAttemptHeldNow() {
    PgTaskWorker w = PgTaskWorker.builder(queue.pool()).concurrency(2).handler("held.k", (ctx, p) -> { }).build();
    dev.pgtask.internal.WorkerConfig config = WorkerAccess.config(w);
    HeldTasks held = new HeldTasks(config, new KindSettings(config, new Outcomes(config)), new Capacity(config),
        new OutcomeWriter(config, new WorkerStats()));
    held.claimStarting();
    LocalTask second = held.register(List.of(claimed(41, 2)), System.nanoTime()).get(0);

    held.apply(Map.of(41L, new Held(HeldState.GONE, 1)), held.checkStarting());
    assertThat(second.stopReason()).as("attempt 2 after an answer that attempt 1 is gone").isEqualTo(LocalTask.Stop.NONE);
    held.apply(Map.of(41L, new Held(HeldState.CANCEL_REQUESTED, 1)), held.checkStarting());
    assertThat(second.stopReason()).as("attempt 2 after a cancel request of attempt 1").isEqualTo(LocalTask.Stop.NONE);

    held.apply(Map.of(41L, new Held(HeldState.GONE, 2)), held.checkStarting());
    assertThat(second.stopReason()).as("attempt 2 after an answer that attempt 2 is gone").isEqualTo(LocalTask.Stop.LOST);
  }

  @Test
  void theCheckNamesTheAttemptEachAnswerIsAbout() throws Exception {
    long id = queue.pgtask().enqueue(NewTask.of("held.db", null, TaskOptions.defaults()));
    var claim = ClaimQueries.claimAvailable(queue.pool(), List.of("default"), List.of("held.db"), 1, "held-w",
        Duration.ofSeconds(30), false);
    assertThat(claim.tasks()).hasSize(1);
    int attempt = claim.tasks().get(0).attempt();
    var dsl = Sql.using(queue.pool());

    assertThat(HeldQueries.checkHeld(dsl, "held-w", List.of(new Fence(id, "held-w", attempt))))
        .as("the attempt held, still running as this worker's").isEmpty();
    assertThat(HeldQueries.checkHeld(dsl, "held-w", List.of(new Fence(id, "held-w", attempt - 1))))
        .as("an earlier attempt").containsEntry(id, new Held(HeldState.GONE, attempt - 1));

    // as an executing attempt does, a transaction holds the row: the cancellation is a request
    try (Connection executing = queue.pool().getConnection(); Statement st = executing.createStatement()) {
      executing.setAutoCommit(false);
      st.execute("SELECT id FROM pgtask.task WHERE id = " + id + " FOR UPDATE");
      assertThat(queue.pgtask().cancel(id)).isEqualTo(CancelResult.CANCEL_REQUESTED);
      assertThat(HeldQueries.checkHeld(dsl, "held-w", List.of(new Fence(id, "held-w", attempt))))
          .as("a cancel request of the attempt held").containsEntry(id, new Held(HeldState.CANCEL_REQUESTED, attempt));
      assertThat(HeldQueries.checkHeld(dsl, "held-w", List.of()))
          .as("a cancel request of a claim not registered yet").containsEntry(id, new Held(HeldState.CANCEL_REQUESTED, attempt));
      executing.rollback();
    }
  }
}
