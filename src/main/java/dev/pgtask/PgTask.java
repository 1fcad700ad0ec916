package dev.pgtask;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgtask.internal.sql.Sql;
import java.sql.Connection;
import java.time.Instant;
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
 * <p>With jOOQ, pass the connection of the jOOQ transaction: {@code dsl.connection(c -> pgtask.enqueue(c, args))}
 * inside {@code dsl.transaction(...)}, or the {@code Connection} of the transaction you manage. pgtask's own
 * jOOQ version never appears in its API, so an application may use any jOOQ version (or none).
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
  private final Enqueuer enqueuer;
  private final TaskOperations tasks;
  private final BulkOperations bulk;
  private final ScheduleOperations schedules;
  private final QueueControl queues;
  private final Limits limits;

  private PgTask(Builder b) {
    this.dataSource = b.dataSource;
    this.objectMapper = b.objectMapper;
    DSLContext dsl = Sql.using(dataSource);
    Payloads payloads = new Payloads(objectMapper);
    this.enqueuer = new Enqueuer(dataSource, dsl, payloads, b.metrics, b.tracing, b.currentTransaction);
    this.tasks = new TaskOperations(dsl, payloads);
    this.bulk = new BulkOperations(dataSource);
    this.schedules = new ScheduleOperations(dsl, payloads);
    this.queues = new QueueControl(dataSource, dsl);
    this.limits = new Limits(dataSource, dsl);
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
    return enqueuer.enqueue(task);
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
   * caller commits. The connection is left as it was (not committed, not closed). With jOOQ:
   * {@code dsl.transaction(cfg -> cfg.dsl().connection(c -> pgtask.enqueue(c, task)))}.
   */
  public long enqueue(Connection tx, NewTask task) {
    return enqueuer.enqueue(tx, task);
  }

  // ---- batches ----

  /**
   * Enqueues a batch in one statement and one transaction; returns the ids in input order. One
   * invalid task rejects the whole batch ({@link InvalidTaskException} names its position).
   */
  public List<Long> enqueueAll(List<NewTask> tasks) {
    return enqueuer.enqueueAll(tasks);
  }

  /** Enqueues a batch inside the caller's transaction on {@code tx}. */
  public List<Long> enqueueAll(Connection tx, List<NewTask> tasks) {
    return enqueuer.enqueueAll(tx, tasks);
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
    return tasks.cancel(taskId);
  }

  /**
   * Makes a retryable, discarded or cancelled task available now, with at least one attempt left.
   *
   * @throws TaskBusyException the task is running ("task N is running on worker W since T")
   * @throws TaskStateException the task is not failed or cancelled
   * @throws TaskNotFoundException no such task
   */
  public void retry(long taskId) {
    tasks.retry(taskId);
  }

  /**
   * Deletes a task that is not running.
   *
   * @throws TaskBusyException the task is running
   * @throws TaskNotFoundException no such task
   */
  public void delete(long taskId) {
    tasks.delete(taskId);
  }

  /**
   * Changes the payload, run time and/or priority of a queued task (scheduled, available or
   * retryable), as {@code change} says; what it does not set stays as it is. The payload follows
   * the enqueue rules.
   *
   * <pre>{@code
   * pgtask.update(taskId, TaskUpdate.runAt(Instant.now().plusSeconds(60)).withPriority(-5));
   * }</pre>
   *
   * @throws TaskBusyException the task is running
   * @throws TaskStateException the task is finished
   * @throws TaskNotFoundException no such task
   * @throws InvalidTaskException the new payload is invalid
   */
  public void update(long taskId, TaskUpdate change) {
    tasks.update(taskId, change);
  }

  // ---- every task a filter matches; with dryRun nothing changes (the result says what would); a
  // filter that sets nothing throws IllegalArgumentException ----

  /**
   * Retries every task {@code filter} matches that {@link #retry} would retry (retryable, discarded
   * or cancelled), in one statement ({@code pgtask.retry_tasks}): available now, with at least one
   * attempt left. Tasks in other states, and tasks another transaction holds at that moment, are
   * skipped and counted, never waited for.
   */
  public BulkResult retryTasks(TaskFilter filter, boolean dryRun) {
    return bulk.retry(filter, dryRun);
  }

  /**
   * Cancels every task {@code filter} matches, as {@link #cancel} does, in one statement
   * ({@code pgtask.cancel_tasks}): queued ones at once; a running one is asked to stop (its worker
   * interrupts and rolls it back), never changed under its worker. Finished tasks are skipped.
   */
  public BulkResult cancelTasks(TaskFilter filter, boolean dryRun) {
    return bulk.cancel(filter, dryRun);
  }

  /**
   * Deletes every task {@code filter} matches that is not running, as {@link #delete} does, in one
   * statement ({@code pgtask.delete_tasks}), with its attempt history. Running tasks are skipped.
   */
  public BulkResult deleteTasks(TaskFilter filter, boolean dryRun) {
    return bulk.delete(filter, dryRun);
  }

  // ---- schedules ----

  /**
   * Declares a recurring task, or changes the schedule of that name (an idempotent upsert: the
   * same declaration again changes nothing; a changed cron expression or zone recomputes the next
   * fire time from now and keeps the schedule's history). Returns the next fire time. Same as
   * {@code pgtask.schedule(...)} in SQL: the database checks the declaration, its cron expression
   * included, and its refusal is thrown as {@link InvalidScheduleException} with the database's message.
   *
   * @throws InvalidScheduleException an invalid cron expression, zone, kind, queue, payload or
   *     policy; nothing is stored
   */
  public Instant schedule(Schedule schedule) {
    return schedules.schedule(schedule);
  }

  /** Removes a schedule (its tasks already enqueued stay); returns whether it existed. */
  public boolean unschedule(String name) {
    return schedules.unschedule(name);
  }

  /** Pauses a schedule: it fires nothing until resumed. Returns whether it exists. */
  public boolean pauseSchedule(String name) {
    return schedules.pause(name);
  }

  /**
   * Resumes a paused schedule from its next fire time after now (the fires that fell while it was
   * paused are not made up). Returns whether it exists.
   */
  public boolean resumeSchedule(String name) {
    return schedules.resume(name);
  }

  /** Every schedule, by name, as the view {@code pgtask.schedules} shows it. */
  public List<ScheduleInfo> schedules() {
    return schedules.list();
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
    return queues.pause(queue);
  }

  /**
   * Resumes a paused queue ({@code pgtask.resume_queue}): its workers are woken and claim from it
   * at once. Resuming a queue that is not paused changes nothing.
   *
   * @return true when this call resumed it, false when it was not paused
   * @throws InvalidTaskException the name is not a valid queue name
   */
  public boolean resumeQueue(String queue) {
    return queues.resume(queue);
  }

  /**
   * The limits of tenants, queues and kinds: N running at once, caps across the cluster, rates on
   * the database clock ({@link Limits#set}, {@link Limits#clear}, {@link Limits#list}).
   */
  public Limits limits() {
    return limits;
  }

  /** Every paused queue ({@code pgtask.paused_queues}), by name. */
  public List<PausedQueue> pausedQueues() {
    return queues.paused();
  }

  /**
   * Why a task is or is not running ({@code pgtask.explain_task_json}), from the database's own
   * state: scheduled, retrying, waiting behind its tenant's task, its tenant's lock held, its queue
   * paused or served by no live worker, its kind handled by none, running (where, since when),
   * finished, or not found. A missing task is an explanation ({@link TaskExplanation#notFound()}),
   * not an exception.
   */
  public TaskExplanation explain(long taskId) {
    return queues.explain(taskId);
  }

  /**
   * Reads one task: its state, payload, recorded attempts with their full errors (stack trace and
   * causes) and why it is or is not running ({@code pgtask.task_detail}); empty when there is no
   * such task. A bounded read-only transaction, as every read of {@link #operations()}.
   *
   * <pre>{@code
   * pgtask.find(taskId).ifPresent(t -> t.attempts().forEach(a -> log.info("{}: {}", a.attempt(), a.errorDetail())));
   * }</pre>
   */
  public java.util.Optional<dev.pgtask.ops.TaskDetail> find(long taskId) {
    return operations().find(taskId);
  }

  /**
   * The operator reads of the public views (queue summary, health, running tasks, tenant locks,
   * workers, what no live worker can run, ...) over this client's data source.
   */
  public dev.pgtask.ops.PgTaskOperations operations() {
    return dev.pgtask.ops.PgTaskOperations.create(dataSource);
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
