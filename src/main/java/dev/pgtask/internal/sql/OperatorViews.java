package dev.pgtask.internal.sql;

import dev.pgtask.ops.ErrorGroup;
import dev.pgtask.ops.Health;
import dev.pgtask.ops.LimitStatus;
import dev.pgtask.ops.LiveWorker;
import dev.pgtask.ops.MaintenanceLeader;
import dev.pgtask.ops.PausedQueueStatus;
import dev.pgtask.ops.QueueSummary;
import dev.pgtask.ops.RunningTask;
import dev.pgtask.ops.ScheduleStatus;
import dev.pgtask.ops.TaskAttempt;
import dev.pgtask.ops.TaskDetail;
import dev.pgtask.ops.TaskSummary;
import dev.pgtask.ops.TenantLoad;
import dev.pgtask.ops.TenantLock;
import dev.pgtask.ops.ThroughputMinute;
import dev.pgtask.ops.Unrunnable;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import org.postgresql.util.PGInterval;
import org.postgresql.util.PGobject;

/**
 * The reads of the public views behind {@link dev.pgtask.ops.PgTaskOperations}: one method per
 * view, plain JDBC over the caller's connection (its bounded read-only transaction), every column
 * read by its name into the view's public record.
 *
 * <p>Plain JDBC, not jOOQ: the operator commands of {@code bin/pgtask} read these views, and must
 * answer in a fraction of a second; jOOQ's initialization (with HikariCP's and Jackson's) cost more
 * than a second of a command's 1.5 s ({@code OpsCommandsStartupIT}). The statements are a
 * {@code SELECT} of a public view with an order. Views read {@code pg_locks} and
 * {@code pg_stat_activity}, which take no lock; none of these reads locks anything.
 */
public final class OperatorViews {

  private final String before;

  /**
   * The reads, each in a transaction whose server-side bounds are set in front of its statement,
   * in the same round trip: {@code statement_timeout} {@code statement}, {@code lock_timeout} and
   * {@code idle_in_transaction_session_timeout} {@code lockAndIdle}, transaction-local ({@code SET
   * LOCAL}, the statements {@link TxBounds#setLocalSql()} sends; written here because loading
   * {@code TxBounds}, whose {@code inTransaction} throws a jOOQ exception, would load jOOQ into the
   * operator commands, {@code OpsCommandsStartupIT}).
   */
  public OperatorViews(Duration statement, Duration lockAndIdle) {
    this.before = "SET LOCAL statement_timeout = " + statement.toMillis() + ";\n"
        + "SET LOCAL lock_timeout = " + lockAndIdle.toMillis() + ";\n"
        + "SET LOCAL idle_in_transaction_session_timeout = " + lockAndIdle.toMillis() + ";\n";
  }

  /** A row of a view as its public record. */
  private interface Row<T> {
    T read(ResultSet rs) throws SQLException;
  }

  /** Every queue's counts and lag, by queue name. */
  public List<QueueSummary> queueSummary(Connection c) throws SQLException {
    return read(c, "queue_summary", "ORDER BY queue", rs -> new QueueSummary(rs.getString("queue"),
        rs.getLong("scheduled"), rs.getLong("available"), rs.getLong("running"), rs.getLong("retryable"),
        rs.getLong("completed"), rs.getLong("cancelled"), rs.getLong("discarded"), rs.getLong("waiting_for_tenant"),
        duration(rs, "lag"), rs.getBoolean("paused"), rs.getLong("claimed_ahead"), rs.getLong("pending")));
  }

  /** Every queue's unfinished tasks, lag and pause ({@code pgtask.queue_depth()}), by queue name. */
  public List<dev.pgtask.ops.QueueDepth> queueDepth(Connection c) throws SQLException {
    return read(c, "queue_depth()", "", rs -> new dev.pgtask.ops.QueueDepth(rs.getString("queue"),
        rs.getLong("scheduled"), rs.getLong("available"), rs.getLong("running"), rs.getLong("claimed_ahead"),
        rs.getLong("retryable"), rs.getLong("waiting_for_tenant"), rs.getLong("pending"), duration(rs, "lag"),
        rs.getBoolean("paused")));
  }

  /** The one row of {@code pgtask.health}. */
  public Health health(Connection c) throws SQLException {
    List<Health> rows = read(c, "health", "", rs -> new Health(integer(rs, "oldest_xact_pid"),
        rs.getString("oldest_xact_application"), duration(rs, "oldest_xact_age"), longOrNull(rs, "task_live_tuples"),
        longOrNull(rs, "task_dead_tuples"), instant(rs, "task_last_autovacuum"), instant(rs, "task_last_vacuum"),
        rs.getLong("task_table_bytes"), rs.getDouble("notification_queue_usage"), rs.getLong("unserved_tasks"),
        rs.getLong("unhandled_tasks"), rs.getLong("tenants_stuck"), rs.getLong("paused_tasks"),
        rs.getLong("limits_over"), rs.getLong("limits_stuck")));
    if (rows.size() != 1) {
      throw new SQLException("pgtask.health returned " + rows.size() + " rows, not one");
    }
    return rows.get(0);
  }

  /** What no live worker can run, most tasks first. */
  public List<Unrunnable> unrunnable(Connection c) throws SQLException {
    return read(c, "unrunnable", "ORDER BY tasks DESC, queue, kind", rs -> new Unrunnable(rs.getString("queue"),
        rs.getString("kind"), rs.getString("reason"), rs.getLong("tasks"), duration(rs, "oldest_due_for"),
        rs.getLong("tenants"), rs.getLong("waiting_behind")));
  }

  /** Every schedule, by name. */
  public List<ScheduleStatus> schedules(Connection c) throws SQLException {
    return read(c, "schedules", "ORDER BY name", rs -> new ScheduleStatus(rs.getString("name"), rs.getString("cron"),
        rs.getString("kind"), rs.getString("queue"), rs.getString("tenant"), rs.getString("time_zone"),
        rs.getBoolean("paused"), instant(rs, "next_fire_at"), instant(rs, "last_fire_at"),
        longOrNull(rs, "last_task_id"), rs.getString("last_task_state"), text(rs, "payload"), rs.getInt("catch_up"),
        rs.getBoolean("allow_overlap"), duration(rs, "jitter"), rs.getInt("priority"), rs.getInt("max_attempts"),
        rs.getLong("fired"), rs.getLong("overlapped"), instant(rs, "last_missed_at"), rs.getInt("missed_pending"),
        rs.getBoolean("queue_paused"), instant(rs, "created_at"), instant(rs, "updated_at")));
  }

  /** The maintenance lease's row, or null when none was ever taken. */
  public MaintenanceLeader maintenanceLeader(Connection c) throws SQLException {
    List<MaintenanceLeader> rows = read(c, "maintenance_leader", "", rs -> new MaintenanceLeader(
        rs.getString("worker"), rs.getString("host"), rs.getLong("pid"), rs.getLong("term"),
        instant(rs, "acquired_at"), instant(rs, "renewed_at"), instant(rs, "lease_until"), rs.getBoolean("live"),
        duration(rs, "renewed_ago")));
    return rows.isEmpty() ? null : rows.get(0);
  }

  /** Paused queues, with or without tasks, by name. */
  public List<PausedQueueStatus> pausedQueues(Connection c) throws SQLException {
    return read(c, "paused_queues", "ORDER BY queue", rs -> new PausedQueueStatus(rs.getString("queue"),
        instant(rs, "paused_at"), rs.getString("paused_by"), duration(rs, "paused_for"), rs.getLong("due"),
        rs.getLong("queued")));
  }

  /** Every limit (pgtask.limits), by scope and key. */
  public List<LimitStatus> limits(Connection c) throws SQLException {
    return read(c, "limits", "ORDER BY scope, key", rs -> new LimitStatus(rs.getString("scope"), rs.getString("key"),
        rs.getInt("max_running"), rs.getLong("running"), rs.getLong("slots_held"), rs.getLong("waiting"),
        instant(rs, "oldest_waiting_since"), rs.getLong("stuck"), instant(rs, "updated_at"),
        rs.getString("updated_by"), rs.getBigDecimal("per_second"), integer(rs, "burst"), integer(rs, "tokens"),
        instant(rs, "next_token_at"), rs.getBigDecimal("weight")));
  }

  /** The busiest tenants of the recent window (at most {@code limit}), in the view's order. */
  public List<TenantLoad> tenantLoad(Connection c, int limit) throws SQLException {
    return read(c, "tenant_load", "LIMIT ?", rs -> new TenantLoad(rs.getString("tenant"),
        rs.getBigDecimal("arrivals_per_min"), rs.getBigDecimal("completions_per_min"), rs.getBigDecimal("mean_run_s"),
        rs.getBigDecimal("p95_run_s"), rs.getBigDecimal("utilisation"), rs.getLong("backlog"),
        rs.getBigDecimal("backlog_trend_per_min"), rs.getBigDecimal("rate_window_min")), limit);
  }

  /** Tenant locks held right now, longest held first. */
  public List<TenantLock> tenantLocks(Connection c) throws SQLException {
    return read(c, "tenant_locks", "ORDER BY xact_start ASC NULLS LAST, tenant", rs -> new TenantLock(
        rs.getString("tenant"), rs.getInt("holder_pid"), rs.getString("application_name"), instant(rs, "xact_start"),
        duration(rs, "held_for"), list(rs, "waiting_pids", Integer.class)));
  }

  /** Running tasks, longest running first; only those with a tenant when {@code withTenantOnly}. */
  public List<RunningTask> running(Connection c, boolean withTenantOnly) throws SQLException {
    return read(c, "running", (withTenantOnly ? "WHERE tenant IS NOT NULL " : "")
        + "ORDER BY started_at ASC NULLS LAST, task_id", rs -> new RunningTask(rs.getLong("task_id"),
        rs.getString("kind"), rs.getString("queue"), rs.getString("tenant"), rs.getString("worker"),
        integer(rs, "backend_pid"), instant(rs, "started_at"), duration(rs, "running_for"),
        bool(rs, "holds_tenant_lock"), instant(rs, "cancel_requested_at"), rs.getBoolean("claimed_ahead")));
  }

  /** Live workers (seen in the last minute), by id. */
  public List<LiveWorker> workers(Connection c) throws SQLException {
    return read(c, "workers", "ORDER BY id", rs -> new LiveWorker(rs.getString("id"), rs.getString("host"),
        rs.getLong("pid"), rs.getString("version"), list(rs, "queues", String.class), list(rs, "kinds", String.class),
        rs.getInt("concurrency"), instant(rs, "started_at"), instant(rs, "last_seen"), duration(rs, "last_seen_ago"),
        bool(rs, "listening")));
  }

  /**
   * Tasks, newest first, filtered by the non-null arguments ({@code state} as the view writes it:
   * {@code scheduled}, {@code available}, ...).
   */
  public List<TaskSummary> tasks(Connection c, String state, String queue, String kind, int limit)
      throws SQLException {
    List<String> where = new ArrayList<>();
    List<Object> args = new ArrayList<>();
    if (state != null) {
      where.add("state = ?");
      args.add(state);
    }
    if (queue != null) {
      where.add("queue = ?");
      args.add(queue);
    }
    if (kind != null) {
      where.add("kind = ?");
      args.add(kind);
    }
    args.add(limit);
    return read(c, "tasks", (where.isEmpty() ? "" : "WHERE " + String.join(" AND ", where) + " ")
        + "ORDER BY id DESC LIMIT ?", rs -> new TaskSummary(rs.getLong("id"), rs.getString("kind"),
        rs.getString("queue"), rs.getString("tenant"), rs.getString("state"), rs.getInt("priority"),
        rs.getInt("attempt"), rs.getInt("max_attempts"), instant(rs, "run_at"), instant(rs, "created_at"),
        instant(rs, "finished_at"), rs.getString("last_error")), args.toArray());
  }

  /**
   * One page of {@code pgtask.task_page}: tasks newest first, below {@code beforeId} (null: from the
   * newest), at most {@code limit}, by the filters that are not null ({@code since} in seconds; last
   * activity from {@code from}, inclusive, until {@code until}, exclusive).
   */
  public List<TaskSummary> taskPage(Connection c, String kind, String queue, String state, String tenant,
      String errorLike, Double sinceSeconds, Instant from, Instant until, Long beforeId, int limit)
      throws SQLException {
    return read(c, "task_page(?, ?, ?, ?, ?, make_interval(secs => ?), ?, ?, ?, ?)", "", rs -> new TaskSummary(
        rs.getLong("id"), rs.getString("kind"), rs.getString("queue"), rs.getString("tenant"), rs.getString("state"),
        rs.getInt("priority"), rs.getInt("attempt"), rs.getInt("max_attempts"), instant(rs, "run_at"),
        instant(rs, "created_at"), instant(rs, "finished_at"), rs.getString("last_error")),
        kind, queue, state, tenant, errorLike, sinceSeconds, timestamp(from), timestamp(until), beforeId, limit);
  }

  /** {@code pgtask.error_groups}: errors by kind and first line, most tasks first. */
  public List<ErrorGroup> errorGroups(Connection c, Double sinceSeconds, Instant from, Instant until, int limit)
      throws SQLException {
    return read(c, "error_groups(make_interval(secs => ?), ?, ?, ?)", "", rs -> new ErrorGroup(rs.getString("kind"),
        rs.getString("error"), rs.getLong("tasks"), rs.getLong("retryable"), rs.getLong("discarded"),
        instant(rs, "first_seen"), instant(rs, "last_seen")), sinceSeconds, timestamp(from), timestamp(until), limit);
  }

  /** {@code pgtask.throughput}: finished tasks per minute, oldest first. */
  public List<ThroughputMinute> throughput(Connection c, int minutes) throws SQLException {
    return read(c, "throughput(?)", "", rs -> new ThroughputMinute(instant(rs, "minute"), rs.getLong("completed"),
        rs.getLong("discarded"), rs.getLong("cancelled")), minutes);
  }

  /** {@code pgtask.explain_task_json(id)} as JSON text (see {@link dev.pgtask.TaskExplanation}). */
  public String explainTask(Connection c, long id) throws SQLException {
    try (PreparedStatement st = c.prepareStatement(before + "SELECT pgtask.explain_task_json(?) AS explanation")) {
      st.setLong(1, id);
      try (ResultSet rs = resultSet(st)) {
        rs.next();
        return rs.getString("explanation");
      }
    }
  }

  /**
   * {@code pgtask.task_detail(id)} as its record, or null when there is no such task: one statement,
   * one row per recorded attempt (one row without an attempt when there is none).
   */
  public TaskDetail taskDetail(Connection c, long id) throws SQLException {
    try (PreparedStatement st = c.prepareStatement(before
        + "SELECT d ->> 'kind' AS kind, d ->> 'queue' AS queue, d ->> 'tenant' AS tenant, d ->> 'state' AS state,\n"
        + "  (d ->> 'priority')::int AS priority, (d ->> 'attempt')::int AS attempt,\n"
        + "  (d ->> 'max_attempts')::int AS max_attempts, (d ->> 'run_at')::timestamptz AS run_at,\n"
        + "  (d ->> 'created_at')::timestamptz AS created_at, (d ->> 'finished_at')::timestamptz AS finished_at,\n"
        + "  d ->> 'worker' AS worker, d ->> 'last_error' AS last_error, (d -> 'payload')::text AS payload,\n"
        + "  d -> 'explanation' ->> 'sentence' AS explanation, d::text AS json,\n"
        + "  x.attempt AS a_attempt, x.outcome AS a_outcome, x.worker AS a_worker, x.started_at AS a_started_at,\n"
        + "  x.finished_at AS a_finished_at, x.error AS a_error, x.error_detail AS a_error_detail\n"
        + "FROM pgtask.task_detail(?) AS d\n"
        + "LEFT JOIN LATERAL jsonb_to_recordset(d -> 'attempts') AS x(attempt int, outcome text, worker text,\n"
        + "  started_at timestamptz, finished_at timestamptz, error text, error_detail text) ON true\n"
        + "WHERE d IS NOT NULL ORDER BY x.attempt")) {
      st.setLong(1, id);
      try (ResultSet rs = resultSet(st)) {
        TaskDetail first = null;
        List<TaskAttempt> attempts = new ArrayList<>();
        while (rs.next()) {
          if (first == null) {
            first = new TaskDetail(id, rs.getString("kind"), rs.getString("queue"), rs.getString("tenant"),
                rs.getString("state"), rs.getInt("priority"), rs.getInt("attempt"), rs.getInt("max_attempts"),
                instant(rs, "run_at"), instant(rs, "created_at"), instant(rs, "finished_at"), rs.getString("worker"),
                rs.getString("last_error"), rs.getString("payload"), List.of(), rs.getString("explanation"),
                rs.getString("json"));
          }
          Integer attempt = integer(rs, "a_attempt");
          if (attempt != null) {
            attempts.add(new TaskAttempt(attempt, rs.getString("a_outcome"), rs.getString("a_worker"),
                instant(rs, "a_started_at"), instant(rs, "a_finished_at"), rs.getString("a_error"),
                rs.getString("a_error_detail")));
          }
        }
        return first == null ? null : new TaskDetail(first.id(), first.kind(), first.queue(), first.tenant(),
            first.state(), first.priority(), first.attempt(), first.maxAttempts(), first.runAt(), first.createdAt(),
            first.finishedAt(), first.worker(), first.lastError(), first.payload(), attempts, first.explanation(),
            first.json());
      }
    }
  }

  /** {@code SELECT * FROM pgtask.<view> <rest>} with {@code args} bound in order, each row read by {@code row}. */
  private <T> List<T> read(Connection c, String view, String rest, Row<T> row, Object... args)
      throws SQLException {
    try (PreparedStatement st = c.prepareStatement(before + "SELECT * FROM pgtask." + view
        + (rest.isEmpty() ? "" : " " + rest))) {
      for (int i = 0; i < args.length; i++) {
        st.setObject(i + 1, args[i]);
      }
      try (ResultSet rs = resultSet(st)) {
        List<T> rows = new ArrayList<>();
        while (rs.next()) {
          rows.add(row.read(rs));
        }
        return List.copyOf(rows);
      }
    }
  }

  /** Executes {@code st} and moves past the update counts of what was sent before its query. */
  private static ResultSet resultSet(PreparedStatement st) throws SQLException {
    boolean isResultSet = st.execute();
    while (!isResultSet) {
      if (st.getUpdateCount() == -1) {
        throw new SQLException("the read returned no result set");
      }
      isResultSet = st.getMoreResults();
    }
    return st.getResultSet();
  }

  /** {@code instant} as a parameter of type {@code timestamptz}, or null. */
  private static OffsetDateTime timestamp(Instant instant) {
    return instant == null ? null : instant.atOffset(java.time.ZoneOffset.UTC);
  }

  private static Instant instant(ResultSet rs, String column) throws SQLException {
    OffsetDateTime t = rs.getObject(column, OffsetDateTime.class);
    return t == null ? null : t.toInstant();
  }

  private static Duration duration(ResultSet rs, String column) throws SQLException {
    Object v = rs.getObject(column);
    return v == null ? null : duration((PGInterval) v);
  }

  private static Long longOrNull(ResultSet rs, String column) throws SQLException {
    long v = rs.getLong(column);
    return rs.wasNull() ? null : v;
  }

  private static Integer integer(ResultSet rs, String column) throws SQLException {
    int v = rs.getInt(column);
    return rs.wasNull() ? null : v;
  }

  private static Boolean bool(ResultSet rs, String column) throws SQLException {
    boolean v = rs.getBoolean(column);
    return rs.wasNull() ? null : v;
  }

  private static String text(ResultSet rs, String column) throws SQLException {
    Object v = rs.getObject(column);
    return v == null ? null : v instanceof PGobject p ? p.getValue() : v.toString();
  }

  private static <E> List<E> list(ResultSet rs, String column, Class<E> type) throws SQLException {
    Array a = rs.getArray(column);
    if (a == null) {
      return null;
    }
    try {
      List<E> values = new ArrayList<>();
      for (Object v : (Object[]) a.getArray()) {
        values.add(type.cast(v));
      }
      return java.util.Collections.unmodifiableList(values);
    } finally {
      a.free();
    }
  }

  /**
   * An interval as a {@link Duration}, each field with its own sign (as PostgreSQL stores it);
   * a month counts as 30 days and a year as 12 months, as {@code justify_interval} does.
   */
  static Duration duration(PGInterval i) {
    long months = (long) i.getYears() * 12 + i.getMonths();
    return Duration.ofDays(months * 30 + i.getDays())
        .plusHours(i.getHours())
        .plusMinutes(i.getMinutes())
        .plusSeconds(i.getWholeSeconds())
        .plusNanos(i.getMicroSeconds() * 1000L);
  }
}
