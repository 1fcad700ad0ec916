package dev.pgtask;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgtask.internal.wakeup.LocalWake;
import dev.pgtask.internal.sql.EnqueueQueries;
import dev.pgtask.internal.sql.OperationQueries;
import dev.pgtask.internal.sql.QueueControlQueries;
import dev.pgtask.internal.sql.Sql;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import javax.sql.DataSource;
import org.jooq.DSLContext;

/**
 * The producer side of pgtask: enqueues tasks, alone or in batches, on their own or inside the
 * caller's transaction.
 *
 * <pre>{@code
 * PgTask pgtask = PgTask.create(dataSource);
 * try (Connection tx = dataSource.getConnection()) {
 *   tx.setAutoCommit(false);
 *   // ... the caller's own writes ...
 *   pgtask.enqueue(tx, new SendInvoice(42), TaskOptions.defaults().withTenant("acme"));
 *   tx.commit(); // the task exists only if this commit happens
 * }
 * }</pre>
 *
 * <p>Every enqueue goes through the database functions {@code pgtask.enqueue} /
 * {@code pgtask.enqueue_batch}, the same ones SQL callers use, so the rules and the resulting rows
 * are identical. A committed enqueue wakes the workers of its queue with one {@code NOTIFY} per
 * queue per transaction. Instances are immutable and thread-safe.
 *
 * <p>Every method throws {@link PgTaskException} when the database has no (or not all of the)
 * pgtask schema, with a message that says so and names {@code Migrations.apply(dataSource)} and
 * {@code pgtask migrate}; it is recognised from the failed statement's SQLSTATE, at no cost to an
 * enqueue that succeeds.
 */
public final class PgTask {

  private final DataSource dataSource;
  private final ObjectMapper objectMapper;
  /** Parses payload strings without read limits: the database names the limit a payload breaks. */
  private final com.fasterxml.jackson.core.JsonFactory payloadParser;
  private final DSLContext dsl;
  private final PgTaskMetrics metrics;
  private final PgTaskTracing tracing;
  private final CurrentTransaction currentTransaction;

  private PgTask(Builder b) {
    this.dataSource = b.dataSource;
    this.objectMapper = b.objectMapper;
    this.payloadParser = objectMapper.getFactory().rebuild()
        .streamReadConstraints(com.fasterxml.jackson.core.StreamReadConstraints.builder()
            .maxNestingDepth(Integer.MAX_VALUE).maxNumberLength(Integer.MAX_VALUE)
            .maxNameLength(Integer.MAX_VALUE).maxStringLength(Integer.MAX_VALUE).build())
        .build();
    this.metrics = b.metrics;
    this.tracing = b.tracing;
    this.currentTransaction = b.currentTransaction;
    this.dsl = Sql.using(dataSource);
  }

  /** A client with default settings over {@code dataSource} (whose schema is migrated). */
  public static PgTask create(DataSource dataSource) {
    return builder(dataSource).build();
  }

  /** A builder for a client over {@code dataSource}. */
  public static Builder builder(DataSource dataSource) {
    return new Builder(dataSource);
  }

  /** The data source this client enqueues through when no transaction is given. */
  public DataSource dataSource() {
    return dataSource;
  }

  /** The Jackson mapper used for payloads. */
  public ObjectMapper objectMapper() {
    return objectMapper;
  }

  // ---- one task, own transaction ----

  /** Enqueues a typed task with default options, in its own transaction. Returns its id. */
  public long enqueue(TaskArgs args) {
    return enqueue(NewTask.of(args));
  }

  /** Enqueues a typed task in its own transaction. Returns its id. */
  public long enqueue(TaskArgs args, TaskOptions options) {
    return enqueue(NewTask.of(args, options));
  }

  /**
   * Enqueues a task in its own transaction, or in the caller's current transaction when the
   * builder's {@link Builder#currentTransaction} finds one. Returns its id, or with a dedupe key
   * held by an unfinished task, that task's id.
   *
   * @throws InvalidTaskException when a field is invalid; nothing is stored
   */
  public long enqueue(NewTask task) {
    Connection current = currentTransaction.connection();
    if (current != null) {
      try {
        return enqueue(current, task);
      } finally {
        currentTransaction.release(current);
      }
    }
    long id = enqueueWith(dsl, task);
    wakeLocalWorkers(task);
    return id;
  }

  // ---- one task, caller's transaction ----

  /** Enqueues a typed task inside the caller's transaction on {@code tx}. */
  public long enqueue(Connection tx, TaskArgs args) {
    return enqueue(tx, NewTask.of(args));
  }

  /** Enqueues a typed task inside the caller's transaction on {@code tx}. */
  public long enqueue(Connection tx, TaskArgs args, TaskOptions options) {
    return enqueue(tx, NewTask.of(args, options));
  }

  /**
   * Enqueues a task inside the caller's transaction on {@code tx}: the task exists only if the
   * caller commits. The connection is left as it was (not committed, not closed).
   */
  public long enqueue(Connection tx, NewTask task) {
    Objects.requireNonNull(tx, "tx");
    return enqueueWith(Sql.using(tx), task);
  }

  /** Enqueues a typed task inside the transaction of the caller's jOOQ context. */
  public long enqueue(DSLContext tx, TaskArgs args) {
    return enqueue(tx, NewTask.of(args));
  }

  /** Enqueues a typed task inside the transaction of the caller's jOOQ context. */
  public long enqueue(DSLContext tx, TaskArgs args, TaskOptions options) {
    return enqueue(tx, NewTask.of(args, options));
  }

  /** Enqueues a task inside the transaction of the caller's jOOQ context. */
  public long enqueue(DSLContext tx, NewTask task) {
    Objects.requireNonNull(tx, "tx");
    return enqueueWith(tx, task);
  }

  // ---- batches ----

  /**
   * Enqueues a batch in one statement and one transaction; returns the ids in input order. One
   * invalid task rejects the whole batch ({@link InvalidTaskException} names its position).
   */
  public List<Long> enqueueAll(List<NewTask> tasks) {
    Objects.requireNonNull(tasks, "tasks");
    if (tasks.isEmpty()) {
      return List.of();
    }
    Connection current = currentTransaction.connection();
    if (current != null) {
      try {
        return enqueueAll(current, tasks);
      } finally {
        currentTransaction.release(current);
      }
    }
    // one transaction: a delay is added to the database's now() read in the same transaction that
    // inserts, so run_at - created_at equals the delay exactly
    try {
      List<Long> ids = dsl.transactionResult(cfg -> enqueueAllWith(cfg.dsl(), tasks));
      java.util.Set<String> woken = new java.util.HashSet<>();
      for (NewTask t : tasks) {
        if (!woken.contains(t.options().queue()) && wakeLocalWorkers(t)) {
          woken.add(t.options().queue());
        }
      }
      return ids;
    } catch (PgTaskException e) {
      throw e;
    } catch (RuntimeException e) {
      throw failure("enqueue batch", e);
    }
  }

  /** Enqueues a batch inside the caller's transaction on {@code tx}. */
  public List<Long> enqueueAll(Connection tx, List<NewTask> tasks) {
    Objects.requireNonNull(tx, "tx");
    return enqueueAllWith(Sql.using(tx), tasks);
  }

  /** Enqueues a batch inside the transaction of the caller's jOOQ context. */
  public List<Long> enqueueAll(DSLContext tx, List<NewTask> tasks) {
    Objects.requireNonNull(tx, "tx");
    return enqueueAllWith(tx, tasks);
  }

  // ---- operations on one task ----

  /**
   * Cancels a task. A queued task is cancelled at once ({@link CancelResult#CANCELLED}); for a
   * running task its worker is told to interrupt the handler and roll back
   * ({@link CancelResult#CANCEL_REQUESTED}, which says what happens when the worker cannot hear it).
   *
   * @throws TaskNotFoundException no such task
   * @throws TaskStateException the task is already finished
   * @throws TaskBusyException another transaction holds the task right now
   */
  public CancelResult cancel(long taskId) {
    try {
      String r = OperationQueries.cancelTask(dsl, taskId);
      return "cancelled".equals(r) ? CancelResult.CANCELLED : CancelResult.CANCEL_REQUESTED;
    } catch (RuntimeException e) {
      throw failure("cancel", e);
    }
  }

  /**
   * Makes a retryable, discarded or cancelled task available now, with at least one attempt left.
   *
   * @throws TaskBusyException the task is running ("task N is running on worker W since T")
   * @throws TaskStateException the task is not failed or cancelled
   * @throws TaskNotFoundException no such task
   */
  public void retry(long taskId) {
    try {
      OperationQueries.retryTask(dsl, taskId);
    } catch (RuntimeException e) {
      throw failure("retry", e);
    }
  }

  /**
   * Deletes a task that is not running.
   *
   * @throws TaskBusyException the task is running
   * @throws TaskNotFoundException no such task
   */
  public void delete(long taskId) {
    try {
      OperationQueries.deleteTask(dsl, taskId);
    } catch (RuntimeException e) {
      throw failure("delete", e);
    }
  }

  /**
   * Changes the payload, run time and/or priority of a queued task (scheduled, available or
   * retryable); {@code null} arguments leave a field as it is. The payload follows the enqueue
   * rules.
   *
   * @throws TaskBusyException the task is running
   * @throws TaskStateException the task is finished
   * @throws InvalidTaskException the new payload is invalid
   */
  public void update(long taskId, Object payload, java.time.Instant runAt, Integer priority) {
    String json = payload == null ? null : payloadJson(payload, -1);
    try {
      OperationQueries.updateTask(dsl, taskId, json, runAt, priority);
    } catch (RuntimeException e) {
      throw failure("update", e);
    }
  }

  // ---- schedules ----

  /**
   * Declares a recurring task, or changes the schedule of that name (an idempotent upsert: the
   * same declaration again changes nothing; a changed cron expression or zone recomputes the next
   * fire time from now and keeps the schedule's history). Returns the next fire time. Same as
   * {@code pgtask.schedule(...)} in SQL.
   *
   * @throws InvalidScheduleException an invalid cron expression, zone, kind, queue, payload or
   *     policy; nothing is stored
   */
  public java.time.Instant schedule(Schedule schedule) {
    Objects.requireNonNull(schedule, "schedule");
    try {
      return dev.pgtask.internal.schedule.Schedules.declare(dsl, objectMapper, schedule);
    } catch (InvalidScheduleException e) {
      throw e;
    } catch (RuntimeException e) {
      throw failure("schedule", e);
    }
  }

  /** Removes a schedule (its tasks already enqueued stay); returns whether it existed. */
  public boolean unschedule(String name) {
    try {
      return dev.pgtask.internal.sql.ScheduleQueries.unschedule(dsl, name);
    } catch (RuntimeException e) {
      throw failure("unschedule", e);
    }
  }

  /** Pauses a schedule: it fires nothing until resumed. Returns whether it exists. */
  public boolean pauseSchedule(String name) {
    try {
      return dev.pgtask.internal.sql.ScheduleQueries.pause(dsl, name);
    } catch (RuntimeException e) {
      throw failure("pause schedule", e);
    }
  }

  /**
   * Resumes a paused schedule from its next fire time after now (the fires that fell while it was
   * paused are not made up). Returns whether it exists.
   */
  public boolean resumeSchedule(String name) {
    try {
      return dev.pgtask.internal.sql.ScheduleQueries.resume(dsl, name);
    } catch (RuntimeException e) {
      throw failure("resume schedule", e);
    }
  }

  /** Every schedule, by name, as the view {@code pgtask.schedules} shows it. */
  public List<ScheduleInfo> schedules() {
    try {
      return dev.pgtask.internal.schedule.Schedules.list(dsl);
    } catch (RuntimeException e) {
      throw failure("list schedules", e);
    }
  }

  // ---- queues and diagnosis ----

  /**
   * Pauses a queue ({@code pgtask.pause_queue}): from the moment this returns, no worker claims a
   * task of it, including workers that start later; tasks already running finish normally, and
   * enqueueing into it still works. Pausing a paused queue changes nothing.
   *
   * @return true when this call paused it, false when it was already paused
   * @throws InvalidTaskException the name is not a valid queue name
   */
  public boolean pauseQueue(String queue) {
    try {
      return "paused".equals(QueueControlQueries.pauseQueue(dsl, queue));
    } catch (RuntimeException e) {
      throw failure("pause queue", e);
    }
  }

  /**
   * Resumes a paused queue ({@code pgtask.resume_queue}): its workers are woken and claim from it
   * at once. Resuming a queue that is not paused changes nothing.
   *
   * @return true when this call resumed it, false when it was not paused
   * @throws InvalidTaskException the name is not a valid queue name
   */
  public boolean resumeQueue(String queue) {
    boolean resumed;
    try {
      resumed = "resumed".equals(QueueControlQueries.resumeQueue(dsl, queue));
    } catch (RuntimeException e) {
      throw failure("resume queue", e);
    }
    if (resumed) {
      LocalWake.committed(dataSource, queue); // the commit's NOTIFY follows anyway
    }
    return resumed;
  }

  /** Every paused queue ({@code pgtask.paused_queues}), by name. */
  public List<PausedQueue> pausedQueues() {
    try {
      return QueueControlQueries.selectPausedQueues(dsl).map(r -> new PausedQueue(r.getQueue(), r.getPausedAt(),
          r.getPausedBy(), r.getDue(), r.getQueued()));
    } catch (RuntimeException e) {
      throw failure("list paused queues", e);
    }
  }

  /**
   * Why a task is or is not running ({@code pgtask.explain_task_json}), from the database's own
   * state: scheduled, retrying, waiting behind its tenant's task, its tenant's lock held, its queue
   * paused or served by no live worker, its kind handled by none, running (where, since when),
   * finished, or not found. A missing task is an explanation ({@link TaskExplanation#notFound()}),
   * not an exception.
   */
  public TaskExplanation explain(long taskId) {
    org.jooq.JSONB json;
    try {
      json = QueueControlQueries.explainTask(dsl, taskId);
    } catch (RuntimeException e) {
      throw failure("explain", e);
    }
    try {
      JsonNode node = objectMapper.readTree(json.data());
      return new TaskExplanation(taskId, node.path("reason").asText(), node.path("sentence").asText(), node);
    } catch (JsonProcessingException e) {
      throw new PgTaskException("pgtask: explain failed: the database's answer is not JSON", e);
    }
  }

  /** SQLSTATEs that mean the pgtask schema, or one of its functions or tables, is not there. */
  private static final java.util.Set<String> NOT_MIGRATED = java.util.Set.of(
      "3F000", // invalid_schema_name: schema "pgtask" does not exist
      "42883", // undefined_function: pgtask.enqueue(...) does not exist (an older schema)
      "42P01"); // undefined_table

  /**
   * The exception for a failed statement: a database without (all of) the pgtask schema says so
   * and how to create it; everything else as {@link Sql#translate}. Looked at only once a
   * statement has failed: the enqueue itself costs no extra round trip.
   */
  private static RuntimeException failure(String action, RuntimeException e) {
    String state = Sql.sqlState(e);
    if (state != null && NOT_MIGRATED.contains(state)) {
      return new PgTaskException("pgtask: " + action + " failed: the pgtask schema is missing or not fully"
          + " migrated in this database (" + serverMessage(e) + ", SQLSTATE " + state + "); run the migrations"
          + " first: Migrations.apply(dataSource) or bin/pgtask migrate", e);
    }
    return Sql.translate(action, e);
  }

  /** The server's one-line message (it names the missing object), without the driver's position line. */
  private static String serverMessage(Throwable e) {
    for (Throwable c = e; c != null; c = c.getCause()) {
      if (c instanceof org.postgresql.util.PSQLException p && p.getServerErrorMessage() != null
          && p.getServerErrorMessage().getMessage() != null) {
        return p.getServerErrorMessage().getMessage();
      }
    }
    return Sql.rootMessage(e).lines().findFirst().orElse("");
  }

  private long enqueueWith(DSLContext ctx, NewTask task) {
    EnqueueQueries.Row row = toRow(task, -1);
    long id;
    try {
      id = EnqueueQueries.enqueue(ctx, row, traceParent());
    } catch (RuntimeException e) {
      throw failure("enqueue", e);
    }
    metrics.enqueued(row.queue(), 1);
    return id;
  }

  /** With tracing: the current traceparent, or "" for none (so nothing set earlier is inherited); null without. */
  private String traceParent() {
    if (tracing == PgTaskTracing.NONE) {
      return null;
    }
    String tp = tracing.currentTraceParent();
    return tp == null ? "" : tp;
  }

  private List<Long> enqueueAllWith(DSLContext ctx, List<NewTask> tasks) {
    Objects.requireNonNull(tasks, "tasks");
    List<EnqueueQueries.Row> rows = new ArrayList<>(tasks.size());
    for (int i = 0; i < tasks.size(); i++) {
      rows.add(toRow(tasks.get(i), i));
    }
    List<Long> ids;
    try {
      ids = EnqueueQueries.enqueueBatch(ctx, rows, traceParent());
    } catch (RuntimeException e) {
      throw failure("enqueue batch", e);
    }
    if (metrics != PgTaskMetrics.NOOP) {
      java.util.Map<String, Integer> perQueue = new java.util.HashMap<>();
      for (EnqueueQueries.Row r : rows) {
        perQueue.merge(r.queue(), 1, Integer::sum);
      }
      perQueue.forEach(metrics::enqueued);
    }
    return ids;
  }

  /**
   * After a commit made here: returns whether the task is due now and, if so, wakes this JVM's workers over the same DataSource that serve the
   * task's queue, if it is due now (see {@link LocalWake}). The commit's NOTIFY follows anyway.
   */
  private boolean wakeLocalWorkers(NewTask task) {
    TaskOptions o = task.options();
    boolean dueNow = (o.delay() == null || o.delay().isZero() || o.delay().isNegative())
        && (o.runAt() == null || !o.runAt().isAfter(java.time.Instant.now()));
    if (dueNow) {
      LocalWake.committed(dataSource, o.queue());
    }
    return dueNow;
  }

  private EnqueueQueries.Row toRow(NewTask task, int index) {
    Objects.requireNonNull(task, "task");
    TaskOptions o = task.options();
    if (o.queue() == null) {
      // pgtask.enqueue rejects a NULL queue while enqueue_batch reads a NULL element as "default":
      // reject it here so a task is treated alike alone and in a batch
      throw new InvalidTaskException("task_queue_format", "pgtask: invalid task"
          + (index < 0 ? "" : " (task " + (index + 1) + " of the batch)") + ": queue must not be empty");
    }
    if (o.runAt() != null && (o.runAt().isBefore(FIRST_RUN_AT) || o.runAt().isAfter(LAST_RUN_AT))
        || o.delay() != null && o.delay().compareTo(java.time.Duration.between(java.time.Instant.now(), LAST_RUN_AT)) > 0) {
      // the database refuses infinity by this name; an Instant it cannot hold would fail in the driver
      throw new InvalidTaskException("task_run_at_finite", "pgtask: invalid task" + where(index)
          + ": run_at must be a finite time the database can hold (4713 BC to 294276 AD), not "
          + (o.runAt() != null ? o.runAt() : "now + " + o.delay()));
    }
    return new EnqueueQueries.Row(task.kind(), payloadJson(task.payload(), index), o.queue(),
        o.tenant(), o.runAt(), o.delay(), o.priority(), o.maxAttempts(), o.dedupeKey());
  }

  /** The range of PostgreSQL's timestamptz. */
  private static final java.time.Instant FIRST_RUN_AT = java.time.LocalDate.of(-4713, 11, 24)
      .atStartOfDay(java.time.ZoneOffset.UTC).toInstant();
  private static final java.time.Instant LAST_RUN_AT = java.time.LocalDateTime.of(294276, 12, 31, 23, 59, 59, 999_999_000)
      .toInstant(java.time.ZoneOffset.UTC);

  private String payloadJson(Object payload, int index) {
    if (payload == null) {
      return "{}";
    }
    try {
      JsonNode node;
      if (payload instanceof String s) {
        // every digit kept (a fraction as BigDecimal, not a double): what is stored is what was given
        node = objectMapper.reader().with(com.fasterxml.jackson.databind.DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
            .readTree(payloadParser.createParser(s));
      } else if (payload instanceof JsonNode n) {
        node = n;
      } else {
        // straight to text, without a tree in between (through the tree, 10,000 small records
        // took 1.5 to 3 times as long): Jackson writes an object as '{' first, anything else otherwise
        String json = objectMapper.writeValueAsString(payload);
        if (json.startsWith("{")) {
          return json;
        }
        node = objectMapper.readTree(json);
      }
      if (node == null || !node.isObject()) {
        throw new InvalidTaskException("task_payload_object", "pgtask: invalid task" + where(index)
            + ": payload must be a JSON object, not " + (node == null ? "empty" : node.getNodeType().name().toLowerCase(java.util.Locale.ROOT)));
      }
      return objectMapper.writeValueAsString(node);
    } catch (com.fasterxml.jackson.core.exc.StreamConstraintsException e) {
      // a limit a worker reads with (PayloadLimits): Jackson's message gives lengths, not the input
      throw new InvalidTaskException(PayloadLimits.constraintOf(e), "pgtask: invalid task" + where(index)
          + ": payload breaks a limit workers read with: " + e.getOriginalMessage());
    } catch (java.io.IOException | IllegalArgumentException e) {
      // Jackson's messages quote the input: never pass them on
      throw new InvalidTaskException("task_payload_json", "pgtask: invalid task" + where(index)
          + ": payload is not valid JSON or cannot be serialized (" + e.getClass().getSimpleName() + ")");
    }
  }

  private static String where(int index) {
    return index < 0 ? "" : " (task " + (index + 1) + " of the batch)";
  }

  /** Builds a {@link PgTask}. */
  public static final class Builder {
    private final DataSource dataSource;
    private ObjectMapper objectMapper;
    private PgTaskMetrics metrics = PgTaskMetrics.NOOP;
    private PgTaskTracing tracing = PgTaskTracing.NONE;
    private CurrentTransaction currentTransaction = CurrentTransaction.NONE;

    private Builder(DataSource dataSource) {
      this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    }

    /**
     * Where the enqueues given no connection look for the caller's transaction (default:
     * {@link CurrentTransaction#NONE}, they always commit on their own). Spring Boot's
     * auto-configuration sets one that joins the Spring-managed transaction of the thread.
     */
    public Builder currentTransaction(CurrentTransaction currentTransaction) {
      this.currentTransaction = Objects.requireNonNull(currentTransaction, "currentTransaction");
      return this;
    }

    /**
     * The Jackson mapper that turns payloads into JSON (default: {@link PgTaskWorker#defaultObjectMapper()},
     * the workers' default, so both sides share its modules).
     */
    public Builder objectMapper(ObjectMapper objectMapper) {
      this.objectMapper = Objects.requireNonNull(objectMapper, "objectMapper");
      return this;
    }

    /**
     * Where to count enqueued tasks (default: nowhere). Counted when the statement succeeds; a
     * caller's transaction that later rolls back is still counted.
     */
    public Builder metrics(PgTaskMetrics metrics) {
      this.metrics = Objects.requireNonNull(metrics, "metrics");
      return this;
    }

    /**
     * Where the enqueuing code's trace context comes from (default: nowhere; see
     * {@code dev.pgtask.otel.OpenTelemetryTracing}): its W3C traceparent is stored with each task
     * enqueued, so that the task's executions join that trace.
     */
    public Builder tracing(PgTaskTracing tracing) {
      this.tracing = Objects.requireNonNull(tracing, "tracing");
      return this;
    }

    /** Validates the settings and builds the client. */
    public PgTask build() {
      if (objectMapper == null) {
        objectMapper = PgTaskWorker.defaultObjectMapper();
      }
      return new PgTask(this);
    }
  }
}
