package dev.pgtask.internal.executor;

import dev.pgtask.internal.complete.Outcome;
import dev.pgtask.internal.complete.Outcomes;
import com.fasterxml.jackson.databind.JsonNode;
import dev.pgtask.internal.HandlerEntry;
import dev.pgtask.internal.WorkerConfig;
import java.time.Duration;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/**
 * The call of a handler: its payload parsed, the handler run under the watchdog (a timer per task
 * that sends {@link LocalTask.Stop#TIMED_OUT} at its deadline), whatever it throws turned into an
 * outcome, and the MDC set around it. Called on an executor thread (or a direct run's caller); the
 * watchdog's one thread only sends stop requests.
 */
final class HandlerCall {

  private static final Logger log = LoggerFactory.getLogger(HandlerCall.class);

  private final WorkerConfig config;
  private final Outcomes outcomes;
  private final Stopping stop;
  private final ScheduledThreadPoolExecutor watchdog;

  HandlerCall(WorkerConfig config, Outcomes outcomes, Stopping stop) {
    this.config = config;
    this.outcomes = outcomes;
    this.stop = stop;
    this.watchdog = new ScheduledThreadPoolExecutor(1, r -> {
      Thread t = new Thread(r, "pgtask-watchdog");
      t.setDaemon(true);
      return t;
    });
    watchdog.setRemoveOnCancelPolicy(true); // one timer per task, almost all cancelled: don't keep them queued
  }

  /** Stops the watchdog's thread. */
  void close() {
    watchdog.shutdownNow();
  }

  /**
   * Runs the handler under the watchdog (stopped at {@code timeout}); returns its outcome. Every
   * throwable is an outcome.
   */
  <T> Outcome supervise(LocalTask t, HandlerEntry<T> handler, T payload, Duration timeout) {
    ScheduledFuture<?> timer = null;
    try {
      timer = watchdog.schedule(() -> t.requestStop(LocalTask.Stop.TIMED_OUT), timeout.toMillis(), TimeUnit.MILLISECONDS);
      if (stop.stopping) {
        t.requestStop(LocalTask.Stop.SHUTDOWN);
      }
      if (t.stopReason() != LocalTask.Stop.NONE) {
        return outcomes.ofStop(t, t.stopReason());
      }
      TracedCall.handle(config.tracing(), t, handler, payload);
      return t.stopReason() == LocalTask.Stop.NONE ? new Outcome.Completed() : outcomes.ofStop(t, t.stopReason());
    } catch (Throwable e) {
      if (t.stopReason() != LocalTask.Stop.NONE) {
        return outcomes.ofStop(t, t.stopReason());
      }
      if (e instanceof Error) {
        log.error("pgtask: task {} attempt {} failed with an error", t.id(), t.claimed.attempt(), e);
      } else if (!(e instanceof dev.pgtask.SnoozeTaskException) && !(e instanceof dev.pgtask.DiscardTaskException)) {
        log.warn("pgtask: task {} attempt {} failed: {}", t.id(), t.claimed.attempt(), e.toString());
      }
      return outcomes.ofFailure(t, e);
    } finally {
      if (timer != null) {
        timer.cancel(false);
      }
      Thread.interrupted();
    }
  }

  /** A task's payload as JSON and as the handler's type. */
  record Payload<T>(JsonNode node, T value) {}

  <T> Payload<T> parse(LocalTask t, HandlerEntry<T> handler) throws Exception {
    JsonNode node = config.objectMapper().readTree(t.claimed.payload().data());
    T value = JsonNode.class.equals(handler.payloadType())
        ? handler.payloadType().cast(node)
        : config.objectMapper().treeToValue(node, handler.payloadType());
    return new Payload<>(node, value);
  }

  /** A payload that does not deserialize never will: discard, naming the field but no value (see PayloadErrors). */
  static Outcome payloadMismatch(LocalTask t, HandlerEntry<?> handler, Exception e) {
    String why = PayloadErrors.describe(handler.payloadType(), e);
    log.warn("pgtask: task {} attempt {} of kind {} is discarded: {}", t.id(), t.claimed.attempt(), handler.kind(), why);
    return Outcome.Failed.discarded(why).because(e);
  }

  /** The MDC keys set while a task runs on a thread (docs/logging.md); removed when it is done. */
  static final String MDC_TASK_ID = "pgtask.task_id", MDC_KIND = "pgtask.kind", MDC_QUEUE = "pgtask.queue",
      MDC_ATTEMPT = "pgtask.attempt", MDC_TENANT = "pgtask.tenant", MDC_WORKER = "pgtask.worker";

  static void withMdc(LocalTask t, Runnable r) {
    MDC.put(MDC_TASK_ID, Long.toString(t.id()));
    MDC.put(MDC_KIND, t.claimed.kind());
    MDC.put(MDC_QUEUE, t.claimed.queue());
    MDC.put(MDC_ATTEMPT, Integer.toString(t.claimed.attempt()));
    if (t.claimed.tenant() != null) {
      MDC.put(MDC_TENANT, t.claimed.tenant());
    }
    MDC.put(MDC_WORKER, t.workerId());
    try {
      r.run();
    } finally {
      MDC.remove(MDC_TASK_ID);
      MDC.remove(MDC_KIND);
      MDC.remove(MDC_QUEUE);
      MDC.remove(MDC_ATTEMPT);
      MDC.remove(MDC_TENANT);
      MDC.remove(MDC_WORKER);
    }
  }
}
