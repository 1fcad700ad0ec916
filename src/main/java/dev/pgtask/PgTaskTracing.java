package dev.pgtask;

/**
 * Where pgtask reports traces: the trace context of the code that enqueues a task travels with it
 * (a W3C {@code traceparent} stored in the task's row), and each execution of the task is reported
 * as a span of that trace. The default, {@link #NONE}, stores and reports nothing; for
 * OpenTelemetry, {@code dev.pgtask.otel.OpenTelemetryTracing}. Give the same instance to
 * {@link PgTask.Builder#tracing} (enqueue) and {@link PgTaskWorker.Builder#tracing} (execution).
 *
 * <p>Implementations must be thread-safe, and must not throw: pgtask calls them on enqueuing
 * threads and on executor threads, around every handler call.
 */
public interface PgTaskTracing {

  /** No tracing: nothing is stored at enqueue, no span is reported. */
  PgTaskTracing NONE = new PgTaskTracing() {
    @Override
    public String currentTraceParent() {
      return null;
    }

    @Override
    public Execution startExecution(TaskContext task, String traceParent) {
      return Execution.NONE;
    }
  };

  /**
   * On the enqueuing thread: the W3C {@code traceparent} of the current trace context, to be
   * stored with the task, or {@code null} when there is none.
   */
  String currentTraceParent();

  /**
   * On the executing thread, right before the handler is called: starts reporting the execution of
   * {@code task}'s current attempt. {@code traceParent} is what was stored at enqueue ({@code null}
   * for a task enqueued without one, e.g. from SQL). The returned execution is ended, on the same
   * thread, when the handler returns or throws.
   */
  Execution startExecution(TaskContext task, String traceParent);

  /** One execution being reported. */
  interface Execution {

    /** Reports nothing. */
    Execution NONE = new Execution() {
      @Override
      public void failed(Throwable error) {}

      @Override
      public void end() {}
    };

    /** The handler threw {@code error} (called before {@link #end()}). */
    void failed(Throwable error);

    /** The handler's call is over. */
    void end();
  }
}
