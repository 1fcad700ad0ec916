package dev.pgtask.internal.executor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.HandlerOptions;
import dev.pgtask.NewTask;
import dev.pgtask.PgTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskOptions;
import dev.pgtask.testsupport.Leaks;
import dev.pgtask.testsupport.QueueDatabase;
import dev.pgtask.testsupport.WorkerFixture;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Every Throwable from a handler is an outcome: an {@code Error} fails the attempt like an
 * exception (recorded, retried or discarded per max_attempts), the executor thread survives it (a
 * worker of concurrency 1 still runs the next task), and nothing stays checked out of the pool.
 */
class HandlerErrorTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("handler_error", 4);

  @RegisterExtension
  final WorkerFixture workers = WorkerFixture.on(queue);

  /** A custom Error subclass, as a library might throw. */
  static final class CustomFatalError extends Error {
    private static final long serialVersionUID = 1L;

    CustomFatalError(String message) {
      super(message);
    }
  }

  static Stream<Arguments> errorsAndModes() {
    Map<String, Supplier<Throwable>> errors = new java.util.LinkedHashMap<>();
    errors.put("NoClassDefFoundError", () -> new NoClassDefFoundError("dev/pgtask/lifecycle/Missing"));
    errors.put("ExceptionInInitializerError", () -> new ExceptionInInitializerError(new IllegalStateException("static init failed")));
    errors.put("OutOfMemoryError", () -> new OutOfMemoryError("test"));
    errors.put("StackOverflowError", StackOverflowError::new);
    errors.put("AssertionError", () -> new AssertionError("handler invariant broken"));
    errors.put("CustomFatalError", () -> new CustomFatalError("custom fatal"));
    return errors.entrySet().stream().flatMap(e -> Stream.of(
        Arguments.of(e.getKey(), e.getValue(), HandlerOptions.Mode.TRANSACTIONAL),
        Arguments.of(e.getKey(), e.getValue(), HandlerOptions.Mode.PLAIN)));
  }

  // Awaitility is told not to catch uncaught exceptions: it would rethrow them in the test thread,
  // and JUnit treats an OutOfMemoryError there as unrecoverable (the forked JVM ends).
  // Threads that died of an uncaught throwable during the test, by name. Today's executor lets an
  // Error escape its thread; captured here (instead of reaching surefire's handler, which ends the
  // forked JVM on an OutOfMemoryError) so the test can say so.
  final Map<String, Throwable> died = new ConcurrentHashMap<>();
  Thread.UncaughtExceptionHandler previous;

  @BeforeEach
  void clean() throws Exception {
    queue.sql().exec("DELETE FROM pgtask.task");
    previous = Thread.getDefaultUncaughtExceptionHandler();
    Thread.setDefaultUncaughtExceptionHandler((t, e) -> died.put(t.getName(), e));
  }

  @AfterEach
  void restoreHandler() {
    Thread.setDefaultUncaughtExceptionHandler(previous);
  }

  @ParameterizedTest(name = "{0} in {2} mode")
  @MethodSource("errorsAndModes")
  void anErrorFromAHandlerIsARecordedOutcomeAndTheExecutorThreadSurvivesIt(String errorName,
      Supplier<Throwable> error, HandlerOptions.Mode mode) throws Exception {
    Set<Long> ran = ConcurrentHashMap.newKeySet();
    // a pool of its own: what this worker leaves checked out is visible after close
    try (HikariDataSource pool = queue.database().pool(3)) {
      PgTask client = PgTask.create(pool);
      PgTaskWorker worker = workers.builder(pool).concurrency(1)
          // long enough that a dead executor's task is not rescued within the test's bounds
          .leaseDuration(Duration.ofSeconds(60))
          .retryBackoff(Duration.ofMillis(10), Duration.ofMillis(50))
          .shutdownTimeout(Duration.ofSeconds(2))
          .handler("err.throw", JsonNode.class, (ctx, p) -> {
            if (p.path("boom").asBoolean()) {
              sneakyThrow(error.get());
            }
            ran.add(ctx.taskId());
          }, HandlerOptions.defaults().withMode(mode))
          .build().start();
      long failing;
      long later;
      try {
        failing = client.enqueue(NewTask.of("err.throw", Map.of("boom", true), TaskOptions.defaults().withMaxAttempts(2)));
        await("the failing task's attempts all recorded").dontCatchUncaughtExceptions().atMost(Duration.ofSeconds(15))
            .until(() -> "discarded".equals(state(failing)));
        assertThat(queue.sql().count("SELECT attempt FROM pgtask.task WHERE id = " + failing))
            .as("attempts of a task whose handler throws " + errorName).isEqualTo(2);
        assertThat(queue.sql().count("SELECT jsonb_array_length(errors) FROM pgtask.task WHERE id = " + failing))
            .as("error entries: one per attempt").isEqualTo(2);
        assertThat(queue.sql().rows("SELECT e ->> 'error' FROM pgtask.task, jsonb_array_elements(errors) e WHERE id = " + failing))
            .as("every error entry names the handler's own error class").hasSize(2)
            .allSatisfy(entry -> assertThat(entry).contains(errorName));

        // concurrency 1: the one executor thread is still there to run the next task
        later = client.enqueue(NewTask.of("err.throw", Map.of()));
        await("a later task runs on the same worker").dontCatchUncaughtExceptions().atMost(Duration.ofSeconds(15))
            .until(() -> "completed".equals(state(later)));
        assertThat(ran).as("handlers that completed").containsExactly(later);
        assertThat(died).as("threads killed by the handler's " + errorName).isEmpty();
      } finally {
        worker.close();
      }
      assertThat(died).as("threads killed by the handler's " + errorName).isEmpty();
      assertThat(pool.getHikariPoolMXBean().getActiveConnections())
          .as("connections still checked out of the pool after close").isZero();
      assertThat(queue.sql().count("SELECT count(*) FROM pgtask.task WHERE state = 'running'"))
          .as("tasks left running after close").isZero();
      Leaks.assertNoAdvisoryLocks(queue.database());
    }
  }

  private static String state(long id) throws Exception {
    return queue.sql().text("SELECT state FROM pgtask.tasks WHERE id = " + id);
  }

  @SuppressWarnings("unchecked")
  private static <E extends Throwable> void sneakyThrow(Throwable t) throws E {
    throw (E) t;
  }

}
