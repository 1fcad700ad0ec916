package dev.pgtask;

import java.time.DateTimeException;
import java.time.Duration;
import java.time.ZoneId;
import java.util.Objects;

/**
 * A recurring task: every fire time of a cron expression, in a time zone, enqueues one task.
 * Immutable; each {@code withX} returns a copy. Declare it with {@link PgTask#schedule(Schedule)}
 * or on the worker's builder ({@link PgTaskWorker.Builder#schedule(Schedule)}); the database keeps
 * it, by name, until {@link PgTask#unschedule(String)}.
 *
 * <pre>{@code
 * Schedule.of("nightly-report", "0 30 2 * * *", new BuildReport("daily"))  // 02:30:00 every day
 *     .withZone("Europe/Berlin")
 *     .withCatchUp(1)                 // a fire missed while no worker ran is enqueued late, once
 *     .withJitter(Duration.ofSeconds(30));
 * }</pre>
 *
 * <p>Cron syntax: five fields ({@code minute hour day-of-month month day-of-week}, as Unix cron),
 * six with seconds first (as Spring writes them: {@code "*}{@code /10 * * * * *"}), or a macro
 * ({@code @yearly}, {@code @annually}, {@code @monthly}, {@code @weekly}, {@code @daily},
 * {@code @midnight}, {@code @hourly}). Fields take {@code *}, numbers, names ({@code JAN}..,
 * {@code SUN}..), ranges {@code a-b}, lists {@code a,b} and steps {@code /n}; {@code ?} in a day
 * field of a six-field expression. {@code L}, {@code W} and {@code #} are not supported. The
 * database is the one parser of the expression ({@code pgtask.cron_parse}, the same for SQL and
 * Java): it is checked at declaration, by {@link PgTask#schedule(Schedule)}, or by
 * {@link PgTaskWorker#start()} for the schedules of the worker's builder (every invalid one named at
 * once, none declared), and an invalid one is refused with {@link InvalidScheduleException} carrying
 * the database's message. The name, the zone and the policies are checked here, at once, and again
 * by the database.
 *
 * <p>Defaults: queue {@value TaskOptions#DEFAULT_QUEUE}, no tenant, zone UTC, missed fires
 * skipped, a fire skipped while the schedule's previous task is unfinished, no jitter, priority 0,
 * 25 attempts.
 */
public final class Schedule {

  /** The time zone of a schedule unless told otherwise. */
  public static final ZoneId DEFAULT_ZONE = ZoneId.of("UTC");

  /** The most missed fires a schedule may catch up. */
  public static final int MAX_CATCH_UP = 1000;

  /** The largest jitter. */
  public static final Duration MAX_JITTER = Duration.ofDays(1);

  private final String name;
  private final String cron;
  private final String kind;
  private final Object payload;
  private final String queue;
  private final String tenant;
  private final ZoneId zone;
  private final int catchUp;
  private final boolean allowOverlap;
  private final Duration jitter;
  private final int priority;
  private final int maxAttempts;

  private Schedule(String name, String cron, String kind, Object payload, String queue, String tenant, ZoneId zone,
      int catchUp, boolean allowOverlap, Duration jitter, int priority, int maxAttempts) {
    this.name = name;
    this.cron = cron;
    this.kind = kind;
    this.payload = payload;
    this.queue = queue;
    this.tenant = tenant;
    this.zone = zone;
    this.catchUp = catchUp;
    this.allowOverlap = allowOverlap;
    this.jitter = jitter;
    this.priority = priority;
    this.maxAttempts = maxAttempts;
  }

  /**
   * A schedule named {@code name} that enqueues {@code args} (its kind, and its fields as the
   * payload) at every fire time of {@code cron}.
   *
   * @throws InvalidScheduleException the name is empty or too long (the cron expression is checked
   *     by the database at declaration)
   */
  public static Schedule of(String name, String cron, TaskArgs args) {
    Objects.requireNonNull(args, "args");
    return of(name, cron, args.kind()).withPayload(args);
  }

  /**
   * A schedule named {@code name} that enqueues a task of {@code kind} with an empty payload at
   * every fire time of {@code cron}.
   *
   * @throws InvalidScheduleException the name is empty or too long (the cron expression is checked
   *     by the database at declaration)
   */
  public static Schedule of(String name, String cron, String kind) {
    if (name == null || name.isBlank()) {
      throw new InvalidScheduleException("schedule_name_length", "pgtask: invalid schedule: name must not be empty");
    }
    if (name.length() > 255) {
      throw new InvalidScheduleException("schedule_name_length",
          "pgtask: invalid schedule: name must be at most 255 characters");
    }
    Objects.requireNonNull(cron, "cron");
    return new Schedule(name, cron.strip(), kind, null, TaskOptions.DEFAULT_QUEUE, null, DEFAULT_ZONE, 0, false,
        Duration.ZERO, TaskOptions.DEFAULT_PRIORITY, TaskOptions.DEFAULT_MAX_ATTEMPTS);
  }

  /** The payload: a record or other Jackson-serializable object, a {@code JsonNode}, or a JSON string (an object). */
  public Schedule withPayload(Object payload) {
    return new Schedule(name, cron, kind, payload, queue, tenant, zone, catchUp, allowOverlap, jitter, priority, maxAttempts);
  }

  /** The queue of the tasks it enqueues. */
  public Schedule withQueue(String queue) {
    return new Schedule(name, cron, kind, payload, queue, tenant, zone, catchUp, allowOverlap, jitter, priority, maxAttempts);
  }

  /** The tenant of the tasks it enqueues (null: none). */
  public Schedule withTenant(String tenant) {
    return new Schedule(name, cron, kind, payload, queue, tenant, zone, catchUp, allowOverlap, jitter, priority, maxAttempts);
  }

  /** The time zone its cron expression is read in: a region id such as {@code Europe/Berlin}, or UTC. */
  public Schedule withZone(ZoneId zone) {
    Objects.requireNonNull(zone, "zone");
    return withZone(zone.getId());
  }

  /**
   * The time zone by name ({@code Europe/Berlin}, {@code UTC}).
   *
   * @throws InvalidScheduleException not a time zone name (offsets such as {@code +02:00} have no DST
   *     rules and are refused)
   */
  public Schedule withZone(String zone) {
    ZoneId z;
    try {
      z = ZoneId.of(Objects.requireNonNull(zone, "zone"));
    } catch (DateTimeException e) {
      throw new InvalidScheduleException("schedule_time_zone", "pgtask: invalid schedule: time zone \""
          + truncate(zone) + "\" is not a time zone name (e.g. UTC, Europe/Berlin)");
    }
    if (!ZoneId.getAvailableZoneIds().contains(z.getId())) {
      throw new InvalidScheduleException("schedule_time_zone", "pgtask: invalid schedule: time zone \""
          + truncate(zone) + "\" is an offset, not a time zone name (e.g. UTC, Europe/Berlin)");
    }
    return new Schedule(name, cron, kind, payload, queue, tenant, z, catchUp, allowOverlap, jitter, priority, maxAttempts);
  }

  /** Missed fires (no worker up, or the queue paused at the fire time) are skipped: the default. */
  public Schedule withSkipMissed() {
    return withCatchUp(0);
  }

  /**
   * Missed fires (no worker up, or the queue paused at the fire time): at most the {@code n}
   * latest of them are enqueued late, each as its own task; older ones are skipped. 0 skips them.
   */
  public Schedule withCatchUp(int n) {
    if (n < 0 || n > MAX_CATCH_UP) {
      throw new InvalidScheduleException("schedule_catch_up_range",
          "pgtask: invalid schedule: catch_up must be between 0 and " + MAX_CATCH_UP);
    }
    return new Schedule(name, cron, kind, payload, queue, tenant, zone, n, allowOverlap, jitter, priority, maxAttempts);
  }

  /** A fire is skipped while the schedule's previous task is unfinished: the default. */
  public Schedule withSkipOverlap() {
    return new Schedule(name, cron, kind, payload, queue, tenant, zone, catchUp, false, jitter, priority, maxAttempts);
  }

  /** Every fire enqueues its task, whether or not the previous one has finished. */
  public Schedule withAllowOverlap() {
    return new Schedule(name, cron, kind, payload, queue, tenant, zone, catchUp, true, jitter, priority, maxAttempts);
  }

  /** Each fire is enqueued after a random delay between 0 and {@code jitter} (at most a day). */
  public Schedule withJitter(Duration jitter) {
    Objects.requireNonNull(jitter, "jitter");
    if (jitter.isNegative() || jitter.compareTo(MAX_JITTER) > 0) {
      throw new InvalidScheduleException("schedule_jitter_range",
          "pgtask: invalid schedule: jitter must be between 0 and 1 day");
    }
    return new Schedule(name, cron, kind, payload, queue, tenant, zone, catchUp, allowOverlap, jitter, priority, maxAttempts);
  }

  /** The priority of the tasks it enqueues (lower runs first). */
  public Schedule withPriority(int priority) {
    return new Schedule(name, cron, kind, payload, queue, tenant, zone, catchUp, allowOverlap, jitter, priority, maxAttempts);
  }

  /** The attempts of the tasks it enqueues. */
  public Schedule withMaxAttempts(int maxAttempts) {
    return new Schedule(name, cron, kind, payload, queue, tenant, zone, catchUp, allowOverlap, jitter, priority, maxAttempts);
  }

  public String name() {
    return name;
  }

  public String cron() {
    return cron;
  }

  public String kind() {
    return kind;
  }

  /** The payload as given (null: an empty object). */
  public Object payload() {
    return payload;
  }

  public String queue() {
    return queue;
  }

  public String tenant() {
    return tenant;
  }

  public ZoneId zone() {
    return zone;
  }

  /** How many missed fires are caught up at most (0: they are skipped). */
  public int catchUp() {
    return catchUp;
  }

  public boolean allowOverlap() {
    return allowOverlap;
  }

  public Duration jitter() {
    return jitter;
  }

  public int priority() {
    return priority;
  }

  public int maxAttempts() {
    return maxAttempts;
  }

  @Override
  public String toString() {
    return "Schedule[" + name + ", " + cron + " " + zone + ", " + kind + " -> " + queue + "]";
  }

  private static String truncate(String s) {
    return s == null ? "null" : s.length() > 100 ? s.substring(0, 100) : s;
  }
}
