package dev.pgtask.internal.wakeup;

import java.time.Duration;

/**
 * The payload codec of pgtask's notifications: the one place that says what a notification on
 * pgtask's channels carries. The database sends most of them (db/R__02a_wakeup.sql, and the
 * control payloads of db/R__04_task_operations.sql and db/R__05a_schedules.sql, which refer to this
 * class); the worker's listener decodes every one here ({@link #decode}).
 *
 * <p>Channel {@value #CHANNEL}, wake-ups:
 * <ul>
 *   <li>{@code <queue>}: a task of that queue is claimable now ({@link DueNow}). Sent by the insert
 *   and put-back triggers, the tenant hand-offs, {@code pgtask.resume_queue}, and by a worker's
 *   claim or owed spill that leaves claimable tasks behind ({@link Spills}).</li>
 *   <li>{@code <queue> <ms>}: the earliest task of that queue that a statement made claimable for
 *   later is due in {@code <ms>} milliseconds, by the database's clock at the time it was sent
 *   ({@link DueLater}). A delay above one day is ignored (the poll finds the task long before); a
 *   negative one means now. Queue names have no spaces (checked on enqueue), so the first space
 *   separates the two.</li>
 * </ul>
 *
 * <p>Channel {@value #CONTROL_CHANNEL}, commands to workers:
 * <ul>
 *   <li>{@code cancel <task id> <attempt>} ({@code pgtask.cancel_task}): a hint that the task's
 *   running attempt should stop ({@link Cancel}); the worker checks it against
 *   {@code pgtask.cancel_request}. The attempt is optional on decoding; a payload over
 *   {@value #MAX_CONTROL_LENGTH} characters is ignored.</li>
 *   <li>{@code schedules} ({@code pgtask.notify_schedules}): the schedules changed
 *   ({@link SchedulesChanged}).</li>
 * </ul>
 *
 * <p>Any role may NOTIFY on any channel: a payload carries no tenant data and no task contents,
 * decoding never throws and never trusts what it reads, and anything else decodes to {@code null}
 * (ignored).
 */
public final class WakePayload {

  /** The channel of wake-ups: a queue has a task due now, or due later. */
  public static final String CHANNEL = "pgtask";
  /** The channel of commands to workers: cancellation hints, schedule changes. */
  public static final String CONTROL_CHANNEL = "pgtask_control";

  /** The longest control payload decoded. */
  static final int MAX_CONTROL_LENGTH = 64;
  /** The longest due-later delay acted on: beyond it, the poll finds the task long before. */
  static final long MAX_DUE_MILLIS = 86_400_000L;

  private static final String CANCEL = "cancel ";
  private static final String SCHEDULES = "schedules";

  private WakePayload() {}

  /** What a notification says, decoded. */
  public sealed interface Message permits DueNow, DueLater, Cancel, SchedulesChanged {}

  /** A task of {@code queue} is claimable now. */
  public record DueNow(String queue) implements Message {}

  /** A task of {@code queue} becomes claimable in {@code delay} (zero or more). */
  public record DueLater(String queue, Duration delay) implements Message {}

  /** A hint that task {@code taskId}'s running attempt was asked to stop (to be checked, not trusted). */
  public record Cancel(long taskId) implements Message {}

  /** The schedules changed (a hint: re-read the next due time). */
  public record SchedulesChanged() implements Message {}

  /** The payload on {@link #CHANNEL} saying that a task of {@code queue} is claimable now. */
  public static String dueNow(String queue) {
    return queue;
  }

  /** The payload on {@link #CHANNEL} saying that a task of {@code queue} is due in {@code millis}. */
  public static String dueIn(String queue, long millis) {
    return queue + " " + millis;
  }

  /** The payload on {@link #CONTROL_CHANNEL} asking the worker of a task's attempt to stop it. */
  public static String cancel(long taskId, int attempt) {
    return CANCEL + taskId + " " + attempt;
  }

  /** The payload on {@link #CONTROL_CHANNEL} saying that the schedules changed. */
  public static String schedulesChanged() {
    return SCHEDULES;
  }

  /** What a notification on {@code channel} with {@code payload} says, or null when it is not pgtask's. */
  public static Message decode(String channel, String payload) {
    if (payload == null) {
      return null;
    }
    if (CHANNEL.equals(channel)) {
      return decodeWake(payload);
    }
    if (CONTROL_CHANNEL.equals(channel)) {
      return decodeControl(payload);
    }
    return null;
  }

  private static Message decodeWake(String payload) {
    int space = payload.indexOf(' ');
    if (space < 0) {
      return new DueNow(payload);
    }
    long ms;
    try {
      ms = Long.parseLong(payload.substring(space + 1));
    } catch (NumberFormatException e) {
      return null;
    }
    return ms <= MAX_DUE_MILLIS ? new DueLater(payload.substring(0, space), Duration.ofMillis(Math.max(0, ms))) : null;
  }

  private static Message decodeControl(String payload) {
    // parse cheaply, never log per message, act only on a task id
    if (SCHEDULES.equals(payload)) {
      return new SchedulesChanged();
    }
    if (!payload.startsWith(CANCEL) || payload.length() > MAX_CONTROL_LENGTH) {
      return null;
    }
    String[] parts = payload.substring(CANCEL.length()).trim().split(" ");
    if (parts.length != 1 && parts.length != 2) {
      return null;
    }
    try {
      return new Cancel(Long.parseLong(parts[0]));
    } catch (NumberFormatException e) {
      return null;
    }
  }
}
