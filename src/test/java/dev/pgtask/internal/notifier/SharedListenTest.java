package dev.pgtask.internal.notifier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.internal.WorkerAccess;
import dev.pgtask.internal.WorkerRuntime;
import dev.pgtask.testsupport.QueueDatabase;
import dev.pgtask.testsupport.WorkerFixture;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The workers of one process on one database share one LISTEN ({@link ListenGroup}): one session
 * LISTENs and passes every notification on, so the server signals one session per process instead
 * of one per worker, and every worker still hears what concerns it. When that session dies, another
 * worker's session listens, and what was sent in between is found by the poll that every worker
 * makes when the hearing starts again; a worker that stops hands its LISTEN over without a break.
 *
 * <p>The workers poll once a minute here, and tasks are enqueued through SQL on a connection of the
 * test (no in-process wake-up): a task that starts within seconds was woken by a notification, or by
 * the poll of a new hearing.
 */
class SharedListenTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("shared_listen", 12);

  @RegisterExtension
  final WorkerFixture workers = WorkerFixture.on(queue).checkingLeaks();

  static final Duration NO_POLL = Duration.ofMinutes(1);
  static final Duration PROMPT = Duration.ofSeconds(5);

  final Set<String> ran = ConcurrentHashMap.newKeySet(); // "queue:task id"
  final List<PgTaskWorker> started = new ArrayList<>();

  @BeforeEach
  void startThreeWorkersOnThreeQueues() throws Exception {
    queue.sql().exec("DELETE FROM pgtask.task");
    for (String q : List.of("sl_a", "sl_b", "sl_c")) {
      started.add(workers.start(workers.builder().queues(q).concurrency(1).pollInterval(NO_POLL)
          .handler("sl.run", JsonNode.class, (ctx, p) -> ran.add(q + ":" + ctx.taskId()))));
    }
    for (PgTaskWorker w : started) {
      workers.awaitListening(w, Duration.ofSeconds(10));
    }
  }

  private static WorkerRuntime runtime(PgTaskWorker w) {
    return WorkerAccess.runtime(w);
  }

  private long listeningSessions() {
    return started.stream().filter(w -> runtime(w).listenSessionListens()).count();
  }

  private PgTaskWorker primary() {
    return started.stream().filter(w -> runtime(w).listenSessionListens()).findFirst().orElseThrow();
  }

  private long enqueue(String q) throws Exception {
    return queue.sql().count("SELECT pgtask.enqueue('sl.run', '{}', queue => '" + q + "')");
  }

  private void awaitRunsPromptly(String q, long id) {
    await("task " + id + " of queue " + q + " runs without waiting for a poll").atMost(PROMPT)
        .until(() -> ran.contains(q + ":" + id));
  }

  @Test
  void theWorkersOfOneProcessListenOnOneSessionAndEachHearsItsQueues() throws Exception {
    assertThat(listeningSessions()).as("sessions of this process's workers that LISTEN").isEqualTo(1);
    assertThat(queue.sql().count("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        + "AND application_name LIKE 'pgtask listen %'")).as("each worker keeps a session of its own for its rounds")
        .isEqualTo(3);
    for (String q : List.of("sl_a", "sl_b", "sl_c")) {
      awaitRunsPromptly(q, enqueue(q));
    }
  }

  @Test
  void whenTheListeningSessionDiesAnotherListensAndWhatWasSentMeanwhileIsFound() throws Exception {
    PgTaskWorker primary = primary();
    assertThat(queue.sql().count("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = "
        + "current_database() AND application_name = 'pgtask listen " + primary.workerId() + "'"))
        .as("listening sessions ended").isEqualTo(1);
    // sent while no session may listen: found by the poll of the next hearing
    List<long[]> sent = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      sent.add(new long[] {i, enqueue(List.of("sl_a", "sl_b", "sl_c").get(i))});
    }
    for (long[] s : sent) {
      awaitRunsPromptly(List.of("sl_a", "sl_b", "sl_c").get((int) s[0]), s[1]);
    }
    await("a session listens again").atMost(PROMPT).until(() -> listeningSessions() == 1);
    // and from then on, notifications reach every worker again
    for (String q : List.of("sl_a", "sl_b", "sl_c")) {
      awaitRunsPromptly(q, enqueue(q));
    }
  }

  @Test
  void aWorkerThatStopsHandsItsListenOverWithoutABreak() throws Exception {
    PgTaskWorker primary = primary();
    List<PgTaskWorker> others = started.stream().filter(w -> w != primary).toList();
    // each worker re-reads its schedules whenever the hearing starts anew: a break would show here
    long readsBefore = others.stream().mapToLong(w -> runtime(w).scheduler().reads()).sum();
    primary.close();
    await("another worker's session listens").atMost(PROMPT)
        .until(() -> others.stream().anyMatch(w -> runtime(w).listenSessionListens()));
    for (PgTaskWorker w : others) {
      String q = w.settings().queues().get(0);
      awaitRunsPromptly(q, enqueue(q));
    }
    assertThat(others.stream().mapToLong(w -> runtime(w).scheduler().reads()).sum())
        .as("re-reads after a break in the hearing").isEqualTo(readsBefore);
    assertThat(others).allMatch(PgTaskWorker::listening);
  }
}
