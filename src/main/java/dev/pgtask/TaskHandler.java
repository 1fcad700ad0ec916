package dev.pgtask;

/**
 * Runs one task of a kind. Register it on {@link PgTaskWorker.Builder#handler}.
 *
 * <p>Returning normally completes the task. In the default transactional mode, the handler runs
 * inside the task's transaction: everything it writes through {@link TaskContext#connection()} or
 * {@link TaskContext#dsl()} commits together with the task's completion, or not at all. Throwing
 * rolls that back and schedules a retry (with backoff) or, once attempts are exhausted, discards
 * the task. To decide explicitly, throw {@link RetryTaskException}, {@link DiscardTaskException}
 * or {@link SnoozeTaskException}.
 *
 * <p>The handler may run more than once for one task (at-least-once): effects outside the database
 * must be idempotent, keyed by {@link TaskContext#idempotencyKey()}.
 *
 * @param <T> the payload type: a {@link TaskArgs} record, or Jackson's {@code JsonNode}
 */
@FunctionalInterface
public interface TaskHandler<T> {

  /** Runs the task. Interrupts mean the task was cancelled, timed out, or the worker is stopping. */
  void handle(TaskContext context, T payload) throws Exception;
}
