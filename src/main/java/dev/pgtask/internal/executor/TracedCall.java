package dev.pgtask.internal.executor;

import dev.pgtask.PgTaskTracing;
import dev.pgtask.internal.HandlerEntry;

/**
 * The handler's call, reported to the worker's {@link PgTaskTracing} (a no-op by default): the
 * one place where the executor meets tracing. An execution that cannot be reported (the tracing
 * implementation failed) is logged and the handler runs all the same.
 */
final class TracedCall {

  private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(TracedCall.class);

  private TracedCall() {}

  static <T> void handle(PgTaskTracing tracing, LocalTask t, HandlerEntry<T> handler, T payload) throws Exception {
    if (tracing == PgTaskTracing.NONE) {
      handler.handler().handle(t, payload);
      return;
    }
    PgTaskTracing.Execution execution;
    try {
      execution = tracing.startExecution(t, t.claimed.traceParent());
    } catch (RuntimeException e) {
      log.warn("pgtask: tracing could not start a span for task {} ({})", t.id(), e.toString());
      execution = PgTaskTracing.Execution.NONE;
    }
    try {
      handler.handler().handle(t, payload);
    } catch (Throwable e) {
      report(execution, e);
      throw e;
    } finally {
      try {
        execution.end();
      } catch (RuntimeException e) {
        log.warn("pgtask: tracing could not end the span of task {} ({})", t.id(), e.toString());
      }
    }
  }

  private static void report(PgTaskTracing.Execution execution, Throwable error) {
    try {
      execution.failed(error);
    } catch (RuntimeException e) {
      log.warn("pgtask: tracing could not record a failure ({})", e.toString());
    }
  }
}
