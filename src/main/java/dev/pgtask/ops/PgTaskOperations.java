package dev.pgtask.ops;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgtask.PgTaskException;
import dev.pgtask.TaskExplanation;
import dev.pgtask.TaskState;
import dev.pgtask.internal.sql.OperatorViews;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * What an operator reads about pgtask, from its public views: the queues, the health of the task
 * table, what no live worker can run, what runs now and which tenant locks it holds, the live
 * workers, paused queues, tenant load, schedules, the maintenance leader, tasks, one task with its
 * attempts and errors ({@link #find}), and why one task is or is not running. The command line
 * ({@code bin/pgtask status}, {@code locks}, {@code workers}, {@code tasks}, {@code show},
 * {@code schedules}, {@code explain}) and the Spring Boot health indicator read
 * through this class; so can an application (a dashboard, an alert, a test).
 *
 * <pre>{@code
 * PgTaskOperations ops = PgTaskOperations.create(dataSource);
 * for (QueueSummary q : ops.queueSummary()) {
 *   System.out.println(q.queue() + ": " + q.available() + " due, lag " + q.lag());
 * }
 * }</pre>
 *
 * <p>Each read is one short read-only transaction on a connection of the data source, bounded on
 * the server: {@code statement_timeout} ({@link #DEFAULT_TIMEOUT} unless {@link #withTimeout} says
 * otherwise), {@code lock_timeout} and {@code idle_in_transaction_session_timeout}. None takes a lock
 * (the views read {@code pg_locks} and {@code pg_stat_activity}). Immutable and thread-safe. A read
 * that fails throws {@link PgTaskException} with the database error as its cause; a database
 * without the pgtask schema fails with SQLSTATE 42P01 (undefined table) or 42883 there.
 *
 * <p>{@code pg_stat_activity} shows other roles' sessions (application names, transaction
 * starts) only to superusers and members of {@code pg_read_all_stats}: grant that role to whoever
 * reads {@link #health()}, {@link #running()} and {@link #tenantLocks()}.
 */
public final class PgTaskOperations {

  /** The server-side statement timeout of each read unless {@link #withTimeout} says otherwise. */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(30);

  /** How long a read waits for a lock, and idles in its transaction, at most (it takes none). */
  private static final Duration LOCK_AND_IDLE = Duration.ofSeconds(5);

  private final DataSource dataSource;
  private final OperatorViews views;

  private PgTaskOperations(DataSource dataSource, Duration timeout) {
    this.dataSource = dataSource;
    this.views = new OperatorViews(timeout, LOCK_AND_IDLE);
  }

  /** The reads over {@code dataSource}'s connections, each bounded by {@link #DEFAULT_TIMEOUT}. */
  public static PgTaskOperations create(DataSource dataSource) {
    return new PgTaskOperations(Objects.requireNonNull(dataSource, "dataSource"), DEFAULT_TIMEOUT);
  }

  /**
   * These reads with another server-side statement timeout (positive; at least a millisecond).
   *
   * @throws IllegalArgumentException when {@code timeout} is not positive
   */
  public PgTaskOperations withTimeout(Duration timeout) {
    if (timeout == null || timeout.toMillis() < 1) {
      throw new IllegalArgumentException("the timeout of pgtask's operator reads must be at least 1 ms: " + timeout);
    }
    return new PgTaskOperations(dataSource, timeout);
  }

  /** Every queue that has tasks or is paused, by name ({@code pgtask.queue_summary}). */
  public List<QueueSummary> queueSummary() {
    return read("pgtask.queue_summary", views::queueSummary);
  }

  /**
   * Every queue's unfinished tasks, lag and pause ({@code pgtask.queue_depth()}): read from the
   * indexes of unfinished tasks, so cheap however much history the table keeps (the dashboard's
   * overview); {@link #queueSummary()} counts the finished tasks too.
   */
  public List<QueueDepth> queueDepth() {
    return read("pgtask.queue_depth", views::queueDepth);
  }

  /** What threatens the task table, and what no live worker can run, summed ({@code pgtask.health}). */
  public Health health() {
    return read("pgtask.health", views::health);
  }

  /** What no live worker can run, by queue, kind and reason, most tasks first ({@code pgtask.unrunnable}). */
  public List<Unrunnable> unrunnable() {
    return read("pgtask.unrunnable", views::unrunnable);
  }

  /** The running tasks, longest running first ({@code pgtask.running}). */
  public List<RunningTask> running() {
    return read("pgtask.running", c -> views.running(c, false));
  }

  /** The running tasks that have a tenant, longest running first ({@code pgtask.running}). */
  public List<RunningTask> runningWithTenant() {
    return read("pgtask.running", c -> views.running(c, true));
  }

  /** The tenant locks held now, longest held first ({@code pgtask.tenant_locks}). */
  public List<TenantLock> tenantLocks() {
    return read("pgtask.tenant_locks", views::tenantLocks);
  }

  /** The workers seen in the last minute, by id ({@code pgtask.workers}). */
  public List<LiveWorker> workers() {
    return read("pgtask.workers", views::workers);
  }

  /**
   * Every limit set with {@code pgtask.set_limit}, by scope and key ({@code pgtask.limits}): what
   * each admits, what runs and waits under it, and the slots held in {@code pg_locks}.
   */
  public List<LimitStatus> limits() {
    return read("pgtask.limits", views::limits);
  }

  /** The paused queues, with or without tasks, by name ({@code pgtask.paused_queues}). */
  public List<PausedQueueStatus> pausedQueues() {
    return read("pgtask.paused_queues", views::pausedQueues);
  }

  /**
   * The busiest tenants of the recent window, at most {@code limit}, busiest first
   * ({@code pgtask.tenant_load}).
   */
  public List<TenantLoad> tenantLoad(int limit) {
    if (limit < 0) {
      throw new IllegalArgumentException("limit must not be negative: " + limit);
    }
    return read("pgtask.tenant_load", c -> views.tenantLoad(c, limit));
  }

  /** Every schedule, by name ({@code pgtask.schedules}). */
  public List<ScheduleStatus> schedules() {
    return read("pgtask.schedules", views::schedules);
  }

  /** The maintenance lease's holder, or empty when no worker ever took it ({@code pgtask.maintenance_leader}). */
  public Optional<MaintenanceLeader> maintenanceLeader() {
    return Optional.ofNullable(read("pgtask.maintenance_leader", views::maintenanceLeader));
  }

  /**
   * Tasks, newest first, at most {@code limit} (1 to 10,000), only those in {@code state}, of
   * {@code queue} and of {@code kind} where these are not null ({@code pgtask.tasks}).
   */
  public List<TaskSummary> tasks(TaskState state, String queue, String kind, int limit) {
    if (limit < 1 || limit > 10_000) {
      throw new IllegalArgumentException("limit must be between 1 and 10000: " + limit);
    }
    return read("pgtask.tasks", c -> views.tasks(c, state == null ? null : state.sqlName(), queue, kind, limit));
  }

  /**
   * One page of tasks, newest first ({@code pgtask.task_page}): at most {@code limit} (1 to 500)
   * tasks with an id below {@code beforeId} (null: from the newest) that match every filter set in
   * {@code filter} (an empty filter matches every task). Keyset pagination: the next page is the one
   * before the last id returned, so a page never sorts or counts the table.
   */
  public List<TaskSummary> tasks(dev.pgtask.TaskFilter filter, Long beforeId, int limit) {
    if (limit < 1 || limit > 500) {
      throw new IllegalArgumentException("limit must be between 1 and 500: " + limit);
    }
    dev.pgtask.TaskFilter f = filter == null ? dev.pgtask.TaskFilter.matching() : filter;
    return read("pgtask.task_page", c -> views.taskPage(c, f.kind(), f.queue(),
        f.state() == null ? null : f.state().sqlName(), f.tenant(), f.errorLike(), seconds(f.since()), f.from(),
        f.until(), beforeId, limit));
  }

  /**
   * The retryable and discarded tasks grouped by kind and the first line of their last error, most
   * tasks first, at most {@code limit} (1 to 500) groups, only those active within {@code since}
   * when it is not null ({@code pgtask.error_groups}).
   */
  public List<ErrorGroup> errorGroups(Duration since, int limit) {
    return errorGroups(since, null, null, limit);
  }

  /**
   * The error groups of {@link #errorGroups(Duration, int)}, only of the tasks whose last activity
   * (finished, else last started) is at or after {@code from} and before {@code until}, each end
   * when it is not null.
   *
   * @throws IllegalArgumentException {@code from} is not before {@code until}, or {@code limit} is not
   *     between 1 and 500
   */
  public List<ErrorGroup> errorGroups(Duration since, Instant from, Instant until, int limit) {
    if (limit < 1 || limit > 500) {
      throw new IllegalArgumentException("limit must be between 1 and 500: " + limit);
    }
    if (from != null && until != null && !from.isBefore(until)) {
      throw new IllegalArgumentException("from must be before until (from is inclusive, until exclusive): from "
          + from + ", until " + until);
    }
    return read("pgtask.error_groups", c -> views.errorGroups(c, seconds(since), from, until, limit));
  }

  /**
   * Finished tasks per minute over the last {@code minutes} (1 to 1440) minutes, oldest first, the
   * minutes without a finished task left out ({@code pgtask.throughput}).
   */
  public List<ThroughputMinute> throughput(int minutes) {
    if (minutes < 1 || minutes > 1440) {
      throw new IllegalArgumentException("minutes must be between 1 and 1440: " + minutes);
    }
    return read("pgtask.throughput", c -> views.throughput(c, minutes));
  }

  private static Double seconds(Duration d) {
    return d == null ? null : d.toNanos() / 1e9;
  }

  /**
   * Why a task is or is not running ({@code pgtask.explain_task_json}), from the database's own
   * state: running (where, for how long), waiting (for what: its run time, its tenant's head or
   * lock, a paused queue, a worker that serves its queue or handles its kind), finished, or not
   * found. A missing task is an explanation ({@link TaskExplanation#notFound()}), not an error.
   */
  public TaskExplanation explain(long taskId) {
    String json = read("pgtask.explain_task_json", c -> views.explainTask(c, taskId));
    try {
      JsonNode node = Json.MAPPER.readTree(json);
      return new TaskExplanation(taskId, node.path("reason").asText(), node.path("sentence").asText(), node);
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new PgTaskException("pgtask: explain failed: the database's answer is not JSON", e);
    }
  }

  /**
   * One task with its payload, its recorded attempts and their full errors (stack traces and causes),
   * and why it is or is not running ({@code pgtask.task_detail}); empty when there is no such task
   * (never enqueued, or deleted).
   */
  public Optional<TaskDetail> find(long taskId) {
    return Optional.ofNullable(read("pgtask.task_detail", c -> views.taskDetail(c, taskId)));
  }

  /** Jackson's data binding, loaded on the first explanation only (the other reads need none). */
  private static final class Json {
    static final ObjectMapper MAPPER = new ObjectMapper();
  }

  /** A read of a view over one connection. */
  private interface Read<T> {
    T read(Connection c) throws SQLException;
  }

  /**
   * {@code read} in a read-only transaction whose server-side bounds are set in front of its one
   * statement (pgjdbc sends BEGIN with them), rolled back afterwards: two round trips.
   */
  private <T> T read(String what, Read<T> read) {
    try (Connection c = dataSource.getConnection()) {
      boolean autoCommit = c.getAutoCommit();
      boolean readOnly = c.isReadOnly();
      c.setAutoCommit(false);
      c.setReadOnly(true);
      try {
        return read.read(c);
      } finally {
        try {
          c.rollback();
        } finally {
          c.setReadOnly(readOnly);
          c.setAutoCommit(autoCommit);
        }
      }
    } catch (SQLException e) {
      throw new PgTaskException("pgtask: read of " + what + " failed: " + e.getMessage()
          + (e.getSQLState() == null ? "" : " (SQLSTATE " + e.getSQLState() + ")"), e);
    }
  }
}
