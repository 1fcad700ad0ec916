package dev.pgtask.testing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskState;
import dev.pgtask.internal.sql.InspectQueries;
import dev.pgtask.internal.sql.InspectQueries.StoredTask;
import dev.pgtask.internal.sql.Sql;
import java.sql.Connection;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.function.Predicate;
import javax.sql.DataSource;
import org.jooq.DSLContext;

/**
 * A query over the stored tasks, for assertions in tests: narrow it with the filters (each returns
 * a new, immutable query), then {@link #list()}, {@link #count()}, or assert with
 * {@link #assertCount}, {@link #assertSingle()} and {@link #assertNone()}, whose
 * {@link AssertionError} names the filters and lists the tasks of the kinds asked for.
 *
 * <pre>{@code
 * try (Connection tx = dataSource.getConnection()) {
 *   tx.setAutoCommit(false);
 *   orders.place(tx, order);                            // enqueues inside tx
 *   EnqueuedTasks.in(tx).ofKind("invoice.send")          // sees the uncommitted task
 *       .withPayload(SendInvoice.class, p -> p.invoiceId() == order.id())
 *       .assertSingle();
 *   tx.rollback();
 * }
 * EnqueuedTasks.in(dataSource).ofKind("invoice.send").assertNone();   // rolled back with it
 * }</pre>
 *
 * <p>It reads the table {@code pgtask.task} (and {@code pgtask.tenant}): the test's role must be
 * allowed to (the schema's owner is; a role with only {@code grant_producer} is not).
 */
public final class EnqueuedTasks {

  private final DataSource dataSource;
  private final Connection connection;
  private final ObjectMapper mapper;
  private final List<String> kinds;
  private final List<String> queues;
  private final List<String> tenants;
  private final boolean noTenant;
  private final Instant runAtFrom;
  private final Instant runAtTo;
  private final Set<TaskState> states;
  private final List<Predicate<EnqueuedTask>> predicates;
  private final List<String> described;

  private EnqueuedTasks(DataSource dataSource, Connection connection, ObjectMapper mapper, List<String> kinds,
      List<String> queues, List<String> tenants, boolean noTenant, Instant runAtFrom, Instant runAtTo,
      Set<TaskState> states, List<Predicate<EnqueuedTask>> predicates, List<String> described) {
    this.dataSource = dataSource;
    this.connection = connection;
    this.mapper = mapper;
    this.kinds = kinds;
    this.queues = queues;
    this.tenants = tenants;
    this.noTenant = noTenant;
    this.runAtFrom = runAtFrom;
    this.runAtTo = runAtTo;
    this.states = states;
    this.predicates = predicates;
    this.described = described;
  }

  /** The committed tasks, read through {@code dataSource}. */
  public static EnqueuedTasks in(DataSource dataSource) {
    return new EnqueuedTasks(Objects.requireNonNull(dataSource, "dataSource"), null,
        PgTaskWorker.defaultObjectMapper(), null, null, null, false, null, null, null, List.of(), List.of());
  }

  /**
   * The tasks as the transaction open on {@code tx} sees them, its own uncommitted enqueues
   * included. The connection is only read from: not committed, rolled back or closed.
   */
  public static EnqueuedTasks in(Connection tx) {
    return new EnqueuedTasks(null, Objects.requireNonNull(tx, "tx"), PgTaskWorker.defaultObjectMapper(), null,
        null, null, false, null, null, null, List.of(), List.of());
  }

  private EnqueuedTasks with(List<String> kinds, List<String> queues, List<String> tenants, boolean noTenant,
      Instant from, Instant to, Set<TaskState> states, Predicate<EnqueuedTask> predicate, String description,
      ObjectMapper mapper) {
    List<Predicate<EnqueuedTask>> p = new ArrayList<>(predicates);
    if (predicate != null) {
      p.add(predicate);
    }
    List<String> d = new ArrayList<>(described);
    if (description != null) {
      d.add(description);
    }
    return new EnqueuedTasks(dataSource, connection, mapper, kinds, queues, tenants, noTenant, from, to, states,
        List.copyOf(p), List.copyOf(d));
  }

  /** Reads typed payloads with {@code mapper} (default: {@link PgTaskWorker#defaultObjectMapper()}). */
  public EnqueuedTasks objectMapper(ObjectMapper mapper) {
    return with(kinds, queues, tenants, noTenant, runAtFrom, runAtTo, states, null, null,
        Objects.requireNonNull(mapper, "mapper"));
  }

  /** Only tasks of these kinds. */
  public EnqueuedTasks ofKind(String... kinds) {
    return with(names(kinds, "kind"), queues, tenants, noTenant, runAtFrom, runAtTo, states, null,
        "kind " + String.join("|", kinds), mapper);
  }

  /** Only tasks in these queues. */
  public EnqueuedTasks inQueue(String... queues) {
    return with(kinds, names(queues, "queue"), tenants, noTenant, runAtFrom, runAtTo, states, null,
        "queue " + String.join("|", queues), mapper);
  }

  /** Only tasks of these tenants. */
  public EnqueuedTasks forTenant(String... tenants) {
    return with(kinds, queues, names(tenants, "tenant"), noTenant, runAtFrom, runAtTo, states, null,
        "tenant " + String.join("|", tenants), mapper);
  }

  /** Only tasks without a tenant. */
  public EnqueuedTasks withoutTenant() {
    return with(kinds, queues, tenants, true, runAtFrom, runAtTo, states, null, "no tenant", mapper);
  }

  /** Only tasks whose run time lies in {@code [from, to]} (database clock; both inclusive). */
  public EnqueuedTasks runAtBetween(Instant from, Instant to) {
    Objects.requireNonNull(from, "from");
    Objects.requireNonNull(to, "to");
    if (to.isBefore(from)) {
      throw new IllegalArgumentException("runAtBetween: " + to + " is before " + from);
    }
    return with(kinds, queues, tenants, noTenant, from, to, states, null, "run_at in [" + from + ", " + to + "]",
        mapper);
  }

  /** Only tasks whose run time satisfies {@code predicate}. */
  public EnqueuedTasks runAt(Predicate<Instant> predicate) {
    Objects.requireNonNull(predicate, "predicate");
    return with(kinds, queues, tenants, noTenant, runAtFrom, runAtTo, states, t -> predicate.test(t.runAt()),
        "run_at matching a predicate", mapper);
  }

  /** Only tasks in these states, as {@code pgtask.tasks} shows them (default: any state). */
  public EnqueuedTasks inState(TaskState... states) {
    if (states.length == 0) {
      throw new IllegalArgumentException("inState: give at least one state");
    }
    return with(kinds, queues, tenants, noTenant, runAtFrom, runAtTo, EnumSet.copyOf(Arrays.asList(states)), null,
        "state " + Arrays.toString(states), mapper);
  }

  /**
   * Only tasks whose payload, read as {@code type}, satisfies {@code predicate}; a payload that does
   * not fit {@code type} does not match.
   */
  public <T> EnqueuedTasks withPayload(Class<T> type, Predicate<? super T> predicate) {
    Objects.requireNonNull(type, "type");
    Objects.requireNonNull(predicate, "predicate");
    return with(kinds, queues, tenants, noTenant, runAtFrom, runAtTo, states, t -> {
      T value;
      try {
        value = t.payload(type);
      } catch (IllegalArgumentException e) {
        return false;
      }
      return predicate.test(value);
    }, "payload as " + type.getSimpleName() + " matching a predicate", mapper);
  }

  /** Only tasks whose raw payload satisfies {@code predicate}. */
  public EnqueuedTasks withPayload(Predicate<JsonNode> predicate) {
    Objects.requireNonNull(predicate, "predicate");
    return with(kinds, queues, tenants, noTenant, runAtFrom, runAtTo, states, t -> predicate.test(t.payload()),
        "payload matching a predicate", mapper);
  }

  /** Only tasks that satisfy {@code predicate}. */
  public EnqueuedTasks matching(Predicate<EnqueuedTask> predicate) {
    Objects.requireNonNull(predicate, "predicate");
    return with(kinds, queues, tenants, noTenant, runAtFrom, runAtTo, states, predicate, "matching a predicate",
        mapper);
  }

  /** The matching tasks, in id (enqueue) order. */
  public List<EnqueuedTask> list() {
    List<EnqueuedTask> out = new ArrayList<>();
    for (EnqueuedTask t : read(true)) {
      if (predicates.stream().allMatch(p -> p.test(t))) {
        out.add(t);
      }
    }
    return out;
  }

  /** How many tasks match. */
  public int count() {
    return list().size();
  }

  /** Throws {@link AssertionError} unless exactly {@code expected} tasks match; returns them. */
  public List<EnqueuedTask> assertCount(int expected) {
    List<EnqueuedTask> found = list();
    if (found.size() != expected) {
      throw new AssertionError("expected " + expected + " task(s) " + description() + ", found " + found.size()
          + context(found));
    }
    return found;
  }

  /** Throws {@link AssertionError} unless exactly one task matches; returns it. */
  public EnqueuedTask assertSingle() {
    return assertCount(1).get(0);
  }

  /** Throws {@link AssertionError} if any task matches. */
  public void assertNone() {
    assertCount(0);
  }

  private String description() {
    return described.isEmpty() ? "(any)" : "with " + String.join(", ", described);
  }

  /** The matches, and the tasks of the kinds asked for (or all) that the other filters left out. */
  private String context(List<EnqueuedTask> found) {
    StringBuilder sb = new StringBuilder();
    if (!found.isEmpty()) {
      sb.append("\n  matching: ").append(limit(found));
    }
    List<EnqueuedTask> near = new ArrayList<>(read(false));
    near.removeIf(t -> found.stream().anyMatch(f -> f.id() == t.id()));
    sb.append("\n  other tasks").append(kinds != null ? " of kind " + String.join("|", kinds) : "").append(": ")
        .append(near.isEmpty() ? "none" : limit(near));
    return sb.toString();
  }

  private static String limit(List<EnqueuedTask> tasks) {
    int max = 20;
    String shown = tasks.subList(0, Math.min(max, tasks.size())).toString();
    return tasks.size() > max ? shown + " and " + (tasks.size() - max) + " more" : shown;
  }

  /** The stored tasks; with {@code filtered}, narrowed in SQL by every filter it can take. */
  private List<EnqueuedTask> read(boolean filtered) {
    DSLContext dsl = connection != null ? Sql.using(connection) : Sql.using(dataSource);
    List<StoredTask> rows = filtered
        ? InspectQueries.find(dsl, kinds, queues, tenants, runAtFrom, runAtTo, null)
        : InspectQueries.find(dsl, kinds, null, null, null, null, null);
    List<EnqueuedTask> out = new ArrayList<>(rows.size());
    for (StoredTask r : rows) {
      TaskState state = TaskState.fromSql(r.state());
      if (filtered && ((noTenant && r.tenant() != null) || (states != null && !states.contains(state)))) {
        continue;
      }
      JsonNode payload;
      try {
        payload = mapper.readTree(r.payloadJson());
      } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
        throw new IllegalStateException("task " + r.id() + " has a payload that is not JSON", e);
      }
      out.add(new EnqueuedTask(r.id(), r.kind(), r.queue(), r.tenant(), state, payload, r.priority(), r.attempt(),
          r.maxAttempts(), r.runAt(), r.createdAt(), r.dedupeKey(), r.lastError(), mapper));
    }
    return out;
  }

  private static List<String> names(String[] values, String what) {
    if (values.length == 0) {
      throw new IllegalArgumentException("give at least one " + what);
    }
    for (String v : values) {
      Objects.requireNonNull(v, what);
    }
    return List.of(values);
  }
}
