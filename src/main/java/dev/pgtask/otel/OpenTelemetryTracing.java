package dev.pgtask.otel;

import dev.pgtask.PgTaskTracing;
import dev.pgtask.SnoozeTaskException;
import dev.pgtask.TaskContext;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanBuilder;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.context.propagation.TextMapGetter;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * pgtask's tracing through OpenTelemetry. At enqueue, the W3C {@code traceparent} of the current
 * context ({@code Context.current()}) is stored with the task. Each execution of a task is a span,
 * following OpenTelemetry's semantic conventions for messaging:
 *
 * <ul>
 *   <li>name {@code process <queue>}, kind {@link SpanKind#CONSUMER};</li>
 *   <li>{@code messaging.system} = {@code pgtask}, {@code messaging.operation.type} and
 *       {@code messaging.operation.name} = {@code process}, {@code messaging.destination.name} =
 *       the queue, {@code messaging.message.id} = the task id; and pgtask's own
 *       {@code pgtask.task.kind}, {@code pgtask.task.attempt}, {@code pgtask.worker.id};</li>
 *   <li>on the first attempt, its parent is the context stored at enqueue; on a later attempt it
 *       starts a trace of its own with a <em>link</em> to that context (a retry hours later is not
 *       part of the enqueuing request's trace, but can be found from it); a task enqueued without
 *       a trace context (from SQL, or with no current span) starts a new trace;</li>
 *   <li>a handler's exception is recorded on the span ({@code recordException}, status ERROR,
 *       {@code error.type} = the exception's class); a snooze is not an error.</li>
 * </ul>
 *
 * <p>The span is current while the handler runs, so spans the handler creates (JDBC, HTTP
 * clients) are its children. It covers the handler's call; the commit that follows it is not part
 * of it.
 *
 * <pre>{@code
 * OpenTelemetryTracing tracing = OpenTelemetryTracing.create(openTelemetry);
 * PgTask pgtask = PgTask.builder(dataSource).tracing(tracing).build();
 * PgTaskWorker worker = PgTaskWorker.builder(dataSource).tracing(tracing) ... .build();
 * }</pre>
 */
public final class OpenTelemetryTracing implements PgTaskTracing {

  /** The instrumentation scope name of pgtask's tracer. */
  public static final String INSTRUMENTATION_NAME = "dev.pgtask";

  static final AttributeKey<String> MESSAGING_SYSTEM = AttributeKey.stringKey("messaging.system");
  static final AttributeKey<String> OPERATION_TYPE = AttributeKey.stringKey("messaging.operation.type");
  static final AttributeKey<String> OPERATION_NAME = AttributeKey.stringKey("messaging.operation.name");
  static final AttributeKey<String> DESTINATION = AttributeKey.stringKey("messaging.destination.name");
  static final AttributeKey<String> MESSAGE_ID = AttributeKey.stringKey("messaging.message.id");
  static final AttributeKey<String> KIND = AttributeKey.stringKey("pgtask.task.kind");
  static final AttributeKey<Long> ATTEMPT = AttributeKey.longKey("pgtask.task.attempt");
  static final AttributeKey<String> WORKER = AttributeKey.stringKey("pgtask.worker.id");
  static final AttributeKey<String> ERROR_TYPE = AttributeKey.stringKey("error.type");

  private static final String TRACEPARENT = "traceparent";

  private static final TextMapGetter<String> FROM_TRACEPARENT = new TextMapGetter<>() {
    @Override
    public Iterable<String> keys(String carrier) {
      return List.of(TRACEPARENT);
    }

    @Override
    public String get(String carrier, String key) {
      return TRACEPARENT.equals(key) ? carrier : null;
    }
  };

  private final Tracer tracer;

  private OpenTelemetryTracing(OpenTelemetry openTelemetry) {
    String version = OpenTelemetryTracing.class.getPackage().getImplementationVersion();
    this.tracer = openTelemetry.getTracerProvider().tracerBuilder(INSTRUMENTATION_NAME)
        .setInstrumentationVersion(version == null ? "dev" : version).build();
  }

  /** Tracing through {@code openTelemetry} (e.g. {@code GlobalOpenTelemetry.get()}, or your SDK instance). */
  public static OpenTelemetryTracing create(OpenTelemetry openTelemetry) {
    return new OpenTelemetryTracing(Objects.requireNonNull(openTelemetry, "openTelemetry"));
  }

  @Override
  public String currentTraceParent() {
    Map<String, String> carrier = new HashMap<>(2);
    W3CTraceContextPropagator.getInstance().inject(Context.current(), carrier, Map::put);
    return carrier.get(TRACEPARENT);
  }

  @Override
  public Execution startExecution(TaskContext task, String traceParent) {
    SpanContext enqueued = traceParent == null ? SpanContext.getInvalid()
        : Span.fromContext(W3CTraceContextPropagator.getInstance().extract(Context.root(), traceParent,
            FROM_TRACEPARENT)).getSpanContext();
    SpanBuilder b = tracer.spanBuilder("process " + task.queue())
        .setSpanKind(SpanKind.CONSUMER)
        .setAttribute(MESSAGING_SYSTEM, "pgtask")
        .setAttribute(OPERATION_TYPE, "process")
        .setAttribute(OPERATION_NAME, "process")
        .setAttribute(DESTINATION, task.queue())
        .setAttribute(MESSAGE_ID, Long.toString(task.taskId()))
        .setAttribute(KIND, task.kind())
        .setAttribute(ATTEMPT, (long) task.attempt())
        .setAttribute(WORKER, task.workerId());
    if (enqueued.isValid() && task.attempt() <= 1) {
      b.setParent(Context.root().with(Span.wrap(enqueued)));
    } else {
      b.setNoParent();
      if (enqueued.isValid()) {
        b.addLink(enqueued);
      }
    }
    Span span = b.startSpan();
    Scope scope = span.makeCurrent();
    return new Execution() {
      @Override
      public void failed(Throwable error) {
        if (error instanceof SnoozeTaskException) {
          span.addEvent("snoozed");
          return;
        }
        span.recordException(error);
        span.setAttribute(ERROR_TYPE, error.getClass().getName());
        span.setStatus(StatusCode.ERROR, error.getMessage() == null ? error.getClass().getName() : error.getMessage());
      }

      @Override
      public void end() {
        scope.close();
        span.end();
      }
    };
  }
}
