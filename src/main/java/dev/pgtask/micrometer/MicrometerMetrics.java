package dev.pgtask.micrometer;

import dev.pgtask.PgTaskMetrics;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * {@link PgTaskMetrics} on Micrometer. Meter names (tags in brackets):
 * <ul>
 *   <li>{@code pgtask.tasks.enqueued} counter [queue]</li>
 *   <li>{@code pgtask.tasks.claimed} counter [queue]</li>
 *   <li>{@code pgtask.tasks.finished} timer [queue, kind, outcome] — outcome: completed, retried,
 *       discarded, cancelled, snoozed, released; the timer's count is the number of attempts</li>
 *   <li>{@code pgtask.tasks.start.latency} timer [queue, kind] — run_at to first start</li>
 *   <li>{@code pgtask.tenant.deferrals} counter [queue]</li>
 *   <li>{@code pgtask.tasks.rescued} counter</li>
 *   <li>{@code pgtask.listener.reconnects} counter</li>
 *   <li>{@code pgtask.queue.available} gauge [queue], {@code pgtask.queue.lag.seconds} gauge [queue]
 *       — sampled by the worker every 15 s</li>
 * </ul>
 */
public final class MicrometerMetrics implements PgTaskMetrics {

  private final MeterRegistry registry;
  private final Map<String, AtomicLong> available = new ConcurrentHashMap<>();
  private final Map<String, AtomicLong> lagMillis = new ConcurrentHashMap<>();

  public MicrometerMetrics(MeterRegistry registry) {
    this.registry = registry;
  }

  @Override
  public void enqueued(String queue, int count) {
    Counter.builder("pgtask.tasks.enqueued").tag("queue", queue).register(registry).increment(count);
  }

  @Override
  public void claimed(String queue, int count) {
    Counter.builder("pgtask.tasks.claimed").tag("queue", queue).register(registry).increment(count);
  }

  @Override
  public void finished(String queue, String kind, String outcome, Duration duration) {
    Timer.builder("pgtask.tasks.finished").tag("queue", queue).tag("kind", kind).tag("outcome", outcome)
        .register(registry).record(duration);
  }

  @Override
  public void startLatency(String queue, String kind, Duration latency) {
    Timer.builder("pgtask.tasks.start.latency").tag("queue", queue).tag("kind", kind)
        .register(registry).record(latency);
  }

  @Override
  public void tenantDeferred(String queue) {
    Counter.builder("pgtask.tenant.deferrals").tag("queue", queue).register(registry).increment();
  }

  @Override
  public void limitDeferred(String queue) {
    Counter.builder("pgtask.limit.deferrals").tag("queue", queue).register(registry).increment();
  }

  @Override
  public void listenerReconnected() {
    Counter.builder("pgtask.listener.reconnects").register(registry).increment();
  }

  @Override
  public void rescued(int count) {
    Counter.builder("pgtask.tasks.rescued").register(registry).increment(count);
  }

  @Override
  public void queueSampled(String queue, long availableNow, Duration lag) {
    available.computeIfAbsent(queue, q -> {
      AtomicLong v = new AtomicLong();
      Gauge.builder("pgtask.queue.available", v, AtomicLong::get).tag("queue", q).register(registry);
      return v;
    }).set(availableNow);
    lagMillis.computeIfAbsent(queue, q -> {
      AtomicLong v = new AtomicLong();
      Gauge.builder("pgtask.queue.lag.seconds", v, x -> x.get() / 1000.0).tag("queue", q).register(registry);
      return v;
    }).set(lag.toMillis());
  }
}
