package dev.pgtask;

/**
 * A schedule was rejected at declaration (an invalid cron expression, time zone, kind, queue,
 * payload or policy); nothing was stored. {@link #constraint()} names the rule, the same name the
 * database uses (e.g. {@code schedule_cron}, {@code schedule_time_zone}, {@code task_queue_format}).
 */
public class InvalidScheduleException extends PgTaskException {

  private static final long serialVersionUID = 1L;

  private final String constraint;

  public InvalidScheduleException(String constraint, String message) {
    super(message);
    this.constraint = constraint;
  }

  public InvalidScheduleException(String constraint, String message, Throwable cause) {
    super(message, cause);
    this.constraint = constraint;
  }

  /** The name of the rule that rejected the schedule, e.g. {@code schedule_cron}. */
  public String constraint() {
    return constraint;
  }
}
