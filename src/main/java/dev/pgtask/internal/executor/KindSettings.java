package dev.pgtask.internal.executor;

import dev.pgtask.internal.complete.Outcomes;
import dev.pgtask.HandlerOptions;
import dev.pgtask.internal.HandlerEntry;
import dev.pgtask.internal.WorkerConfig;
import dev.pgtask.internal.sql.ClaimQueries.Claimed;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * What each kind's handler options mean for the SQL: which kinds run plain, the server-side
 * timeouts of a task transaction, the transaction's {@code application_name}. Read by the producer
 * (claim parameters) and the executor threads. Immutable after construction.
 */
final class KindSettings {

  private final WorkerConfig config;
  private final Outcomes outcomes;

  KindSettings(WorkerConfig config, Outcomes outcomes) {
    this.config = config;
    this.outcomes = outcomes;
  }

  /**
   * The plain-mode kinds (run outside any transaction unless the task has a tenant), for the claim
   * that picks its head among the others.
   */
  List<String> plainKinds() {
    List<String> kinds = new ArrayList<>();
    config.handlers().forEach((kind, h) -> {
      if (h.options().mode() == HandlerOptions.Mode.PLAIN) {
        kinds.add(kind);
      }
    });
    return kinds;
  }

  /** {"kind": "millis"}: the server-side timeouts of each kind's task transaction. */
  org.postgresql.util.PGobject serverTimeouts() {
    Map<String, String> millis = new java.util.TreeMap<>();
    config.handlers().forEach((kind, h) -> millis.put(kind, Long.toString(serverTimeoutMillis(h))));
    org.postgresql.util.PGobject value = new org.postgresql.util.PGobject();
    value.setType("jsonb");
    try {
      value.setValue(config.objectMapper().writeValueAsString(millis));
    } catch (SQLException | com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
    return value;
  }

  /**
   * Plain-mode kinds run outside any transaction, except tasks with a tenant or under a queue or
   * kind concurrency limit (their slots live in the task transaction).
   */
  boolean runsPlain(Claimed c) {
    HandlerEntry<?> h = config.handlers().get(c.kind());
    return h != null && h.options().mode() == HandlerOptions.Mode.PLAIN && c.tenantId() == null && !c.capped();
  }

  /** Transaction-local {@code application_name} while {@code t} runs: which task, on which worker. */
  String applicationName(LocalTask t) {
    String name = "pgtask task " + t.id() + " " + config.workerId();
    return name.length() > 63 ? name.substring(0, 63) : name;
  }

  /** The server-side statement and idle timeouts of a task transaction: a little above the task timeout. */
  long serverTimeoutMillis(HandlerEntry<?> handler) {
    long t = outcomes.timeout(handler).toMillis();
    return t + Math.max(5_000, t / 10);
  }
}
