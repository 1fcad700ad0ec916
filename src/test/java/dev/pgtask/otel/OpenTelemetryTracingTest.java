package dev.pgtask.otel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.pgtask.NewTask;
import dev.pgtask.PgTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskOptions;
import dev.pgtask.testsupport.QueueDatabase;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Tracing with the OpenTelemetry SDK's in-memory exporter against a real worker: the enqueuing
 * code's trace context is stored with the task and is the parent of its first execution's span, a
 * retry's span links to it instead, a task enqueued from SQL starts a new trace, failures are
 * recorded on the span.
 */
class OpenTelemetryTracingTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("otel", 8);

  static final InMemorySpanExporter exporter = InMemorySpanExporter.create();
  static final OpenTelemetrySdk sdk = OpenTelemetrySdk.builder()
      .setTracerProvider(SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(exporter)).build())
      .build();
  static final OpenTelemetryTracing tracing = OpenTelemetryTracing.create(sdk);

  @AfterAll
  static void closeSdk() {
    sdk.close();
  }

  @BeforeEach
  void reset() {
    exporter.reset();
  }

  private static PgTask tracedClient() {
    return PgTask.builder(queue.pool()).tracing(tracing).build();
  }

  private static List<SpanData> executions(String queueName, int n) {
    await().atMost(Duration.ofSeconds(20)).until(() -> executionSpans(queueName).size() >= n);
    return executionSpans(queueName);
  }

  private static List<SpanData> executionSpans(String queueName) {
    return exporter.getFinishedSpanItems().stream().filter(s -> s.getName().equals("process " + queueName)).toList();
  }

  private static PgTaskWorker worker(String queueName, Map<Long, Integer> failUntilAttempt) {
    return PgTaskWorker.builder(queue.pool()).queues(queueName).concurrency(2).tracing(tracing)
        .retryBackoff(Duration.ZERO, Duration.ofSeconds(1))
        .handler("traced.work", JsonNode.class, (ctx, payload) -> {
          if (ctx.attempt() <= failUntilAttempt.getOrDefault(ctx.taskId(), 0)) {
            throw new IllegalStateException("attempt " + ctx.attempt() + " fails");
          }
        })
        .build();
  }

  @Test
  void theFirstExecutionIsAConsumerSpanWhoseParentIsTheEnqueuingSpan() throws Exception {
    Span enqueuer = sdk.getTracer("test").spanBuilder("place order").startSpan();
    long id;
    try (Scope ignored = enqueuer.makeCurrent()) {
      id = tracedClient().enqueue(NewTask.of("traced.work", Map.of(), TaskOptions.defaults().withQueue("otel_first")));
    } finally {
      enqueuer.end();
    }
    String expected = "00-" + enqueuer.getSpanContext().getTraceId() + "-" + enqueuer.getSpanContext().getSpanId()
        + "-" + enqueuer.getSpanContext().getTraceFlags().asHex();
    assertThat(queue.sql().text("SELECT trace_parent FROM pgtask.task WHERE id = " + id))
        .as("the enqueuing span's traceparent is stored with the task").isEqualTo(expected);

    PgTaskWorker w = worker("otel_first", Map.of()).start();
    try {
      SpanData span = executions("otel_first", 1).get(0);
      assertThat(span.getKind()).isEqualTo(SpanKind.CONSUMER);
      assertThat(span.getTraceId()).isEqualTo(enqueuer.getSpanContext().getTraceId());
      assertThat(span.getParentSpanId()).isEqualTo(enqueuer.getSpanContext().getSpanId());
      assertThat(span.getLinks()).isEmpty();
      assertThat(span.getAttributes().asMap()).containsAllEntriesOf(Map.of(
          AttributeKey.stringKey("messaging.system"), "pgtask",
          AttributeKey.stringKey("messaging.operation.type"), "process",
          AttributeKey.stringKey("messaging.operation.name"), "process",
          AttributeKey.stringKey("messaging.destination.name"), "otel_first",
          AttributeKey.stringKey("messaging.message.id"), Long.toString(id),
          AttributeKey.stringKey("pgtask.task.kind"), "traced.work",
          AttributeKey.longKey("pgtask.task.attempt"), 1L,
          AttributeKey.stringKey("pgtask.worker.id"), w.workerId()));
      assertThat(span.getStatus().getStatusCode()).isEqualTo(StatusCode.UNSET);
      assertThat(span.getInstrumentationScopeInfo().getName()).isEqualTo("dev.pgtask");
    } finally {
      w.close();
    }
  }

  @Test
  void aRetryStartsItsOwnTraceLinkedToTheEnqueuingSpanAndTheFailureIsRecorded() throws Exception {
    Span enqueuer = sdk.getTracer("test").spanBuilder("import batch").startSpan();
    long id;
    try (Scope ignored = enqueuer.makeCurrent()) {
      id = tracedClient().enqueueAll(List.of(NewTask.of("traced.work", Map.of(), TaskOptions.defaults()
          .withQueue("otel_retry")))).get(0);
    } finally {
      enqueuer.end();
    }
    PgTaskWorker w = worker("otel_retry", Map.of(id, 1)).start();
    try {
      List<SpanData> spans = executions("otel_retry", 2);
      SpanData first = spans.stream().filter(s -> s.getAttributes().get(AttributeKey.longKey("pgtask.task.attempt")) == 1)
          .findFirst().orElseThrow();
      SpanData retry = spans.stream().filter(s -> s.getAttributes().get(AttributeKey.longKey("pgtask.task.attempt")) == 2)
          .findFirst().orElseThrow();
      assertThat(first.getParentSpanId()).isEqualTo(enqueuer.getSpanContext().getSpanId());
      assertThat(first.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
      assertThat(first.getAttributes().get(AttributeKey.stringKey("error.type")))
          .isEqualTo("java.lang.IllegalStateException");
      assertThat(first.getEvents()).anySatisfy(e -> {
        assertThat(e.getName()).isEqualTo("exception");
        assertThat(e.getAttributes().get(AttributeKey.stringKey("exception.message"))).isEqualTo("attempt 1 fails");
      });
      assertThat(retry.getParentSpanContext().isValid()).as("a retry has no parent").isFalse();
      assertThat(retry.getTraceId()).as("a retry starts a trace of its own")
          .isNotEqualTo(enqueuer.getSpanContext().getTraceId());
      assertThat(retry.getLinks()).singleElement().satisfies(l -> {
        assertThat(l.getSpanContext().getTraceId()).isEqualTo(enqueuer.getSpanContext().getTraceId());
        assertThat(l.getSpanContext().getSpanId()).isEqualTo(enqueuer.getSpanContext().getSpanId());
      });
      assertThat(retry.getStatus().getStatusCode()).isEqualTo(StatusCode.UNSET);
    } finally {
      w.close();
    }
  }

  @Test
  void aTaskEnqueuedFromSqlStartsANewTrace() throws Exception {
    queue.sql().exec("SELECT pgtask.enqueue('traced.work', queue => 'otel_sql')");
    Span unrelated = sdk.getTracer("test").spanBuilder("unrelated").startSpan();
    PgTaskWorker w = worker("otel_sql", Map.of()).start();
    try {
      SpanData span = executions("otel_sql", 1).get(0);
      assertThat(span.getParentSpanContext().isValid()).isFalse();
      assertThat(span.getLinks()).isEmpty();
      assertThat(span.getTraceId()).isNotEqualTo(unrelated.getSpanContext().getTraceId());
    } finally {
      unrelated.end();
      w.close();
    }
  }

  @Test
  void sqlCallersMaySetTheTraceParentAndAMalformedOneIsRejected() throws Exception {
    String tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    try (Connection c = queue.pool().getConnection(); Statement st = c.createStatement()) {
      c.setAutoCommit(false);
      st.execute("SET LOCAL pgtask.trace_parent = '" + tp + "'");
      st.execute("SELECT pgtask.enqueue('traced.work', queue => 'otel_sqlset')");
      c.commit();
      st.execute("SET LOCAL pgtask.trace_parent = 'not-a-traceparent'");
      assertThatThrownBy(() -> st.execute("SELECT pgtask.enqueue('traced.work', queue => 'otel_sqlset')"))
          .hasMessageContaining("pgtask.trace_parent is not a W3C traceparent");
      c.rollback();
    }
    assertThat(queue.sql().rows("SELECT coalesce(trace_parent, '-') FROM pgtask.task WHERE queue = 'otel_sqlset'"))
        .containsExactly(tp);
    PgTaskWorker w = worker("otel_sqlset", Map.of()).start();
    try {
      SpanData span = executions("otel_sqlset", 1).get(0);
      assertThat(span.getTraceId()).isEqualTo("4bf92f3577b34da6a3ce929d0e0e4736");
      assertThat(span.getParentSpanId()).isEqualTo("00f067aa0ba902b7");
    } finally {
      w.close();
    }
  }

  @Test
  void anEnqueueWithoutACurrentSpanStoresNoTraceContextAndInheritsNone() throws Exception {
    PgTask client = tracedClient();
    Span enqueuer = sdk.getTracer("test").spanBuilder("first").startSpan();
    try (Connection tx = queue.pool().getConnection()) {
      tx.setAutoCommit(false);
      try (Scope ignored = enqueuer.makeCurrent()) {
        client.enqueue(tx, NewTask.of("traced.work", Map.of("n", 1), TaskOptions.defaults().withQueue("otel_none")));
      }
      // same transaction, no current span now: nothing is inherited from the first enqueue
      client.enqueue(tx, NewTask.of("traced.work", Map.of("n", 2), TaskOptions.defaults().withQueue("otel_none")));
      PgTask.create(queue.pool()); // a client without tracing leaves the column alone
      tx.commit();
    } finally {
      enqueuer.end();
    }
    PgTask.create(queue.pool()).enqueue(NewTask.of("traced.work", Map.of("n", 3), TaskOptions.defaults()
        .withQueue("otel_none")));
    assertThat(queue.sql().rows("SELECT (payload ->> 'n') || ' ' || (trace_parent IS NOT NULL) FROM pgtask.task"
        + " WHERE queue = 'otel_none' ORDER BY id")).containsExactly("1 true", "2 false", "3 false");
  }

  @Test
  void tracingDoesNotChangeWhatTheWorkerDoes() {
    Map<Long, Integer> fail = new ConcurrentHashMap<>();
    long id = tracedClient().enqueue(NewTask.of("traced.work", Map.of(), TaskOptions.defaults().withQueue("otel_same")));
    fail.put(id, 2);
    PgTaskWorker w = worker("otel_same", fail).start();
    try {
      await().atMost(Duration.ofSeconds(20)).until(() -> "completed".equals(
          queue.sql().text("SELECT state FROM pgtask.tasks WHERE id = " + id)));
      assertThat(executions("otel_same", 3)).hasSize(3);
    } finally {
      w.close();
    }
  }
}
