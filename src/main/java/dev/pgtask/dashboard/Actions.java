package dev.pgtask.dashboard;

import dev.pgtask.PgTask;
import java.util.Map;

/**
 * The POST routes: which {@link DashboardAction} a path names (asked of the access callback before
 * anything runs), and running it through {@link PgTask}: one task's retry, cancel or delete, a
 * queue's or schedule's pause or resume, a bulk operation ({@link BulkPage}).
 */
final class Actions {

  /** An action and its target, parsed from a POST's path. */
  record Target(DashboardAction action, String subject) {}

  private Actions() {}

  /** The action {@code path} names, or null when it names none. */
  static Target target(String path) {
    if (path.equals("/bulk")) {
      return new Target(null, null);
    }
    int slash = path.lastIndexOf('/');
    if (slash <= 0) {
      return null;
    }
    String verb = path.substring(slash + 1);
    String head = path.substring(0, slash);
    if (head.startsWith("/tasks/")) {
      String id = head.substring("/tasks/".length());
      DashboardAction a = switch (verb) {
        case "retry" -> DashboardAction.RETRY_TASK;
        case "cancel" -> DashboardAction.CANCEL_TASK;
        case "delete" -> DashboardAction.DELETE_TASK;
        default -> null;
      };
      return a == null || !id.matches("[0-9]{1,19}") ? null : new Target(a, id);
    }
    if (head.startsWith("/queues/") && head.length() > "/queues/".length()) {
      DashboardAction a = verb.equals("pause") ? DashboardAction.PAUSE_QUEUE
          : verb.equals("resume") ? DashboardAction.RESUME_QUEUE : null;
      return a == null ? null : new Target(a, head.substring("/queues/".length()));
    }
    if (head.startsWith("/schedules/") && head.length() > "/schedules/".length()) {
      DashboardAction a = verb.equals("pause") ? DashboardAction.PAUSE_SCHEDULE
          : verb.equals("resume") ? DashboardAction.RESUME_SCHEDULE : null;
      return a == null ? null : new Target(a, head.substring("/schedules/".length()));
    }
    return null;
  }

  /** The bulk POST's action, from its form. */
  static DashboardAction bulkAction(Map<String, String> form) {
    return BulkPage.action(form);
  }

  /** Runs a single-target action; returns where to go next (below the mount point). */
  static String perform(PgTask pgtask, Target t) {
    switch (t.action()) {
      case RETRY_TASK -> {
        pgtask.retry(Long.parseLong(t.subject()));
        return "/tasks/" + t.subject() + "?done=retried";
      }
      case CANCEL_TASK -> {
        pgtask.cancel(Long.parseLong(t.subject()));
        return "/tasks/" + t.subject() + "?done=cancelled";
      }
      case DELETE_TASK -> {
        pgtask.delete(Long.parseLong(t.subject()));
        return "/tasks?done=deleted";
      }
      case PAUSE_QUEUE -> {
        pgtask.pauseQueue(t.subject());
        return "/?done=paused";
      }
      case RESUME_QUEUE -> {
        pgtask.resumeQueue(t.subject());
        return "/?done=resumed";
      }
      case PAUSE_SCHEDULE -> {
        requireSchedule(pgtask.pauseSchedule(t.subject()), t.subject());
        return "/schedules?done=paused";
      }
      case RESUME_SCHEDULE -> {
        requireSchedule(pgtask.resumeSchedule(t.subject()), t.subject());
        return "/schedules?done=resumed";
      }
      default -> throw new IllegalStateException("not a single-target action: " + t.action());
    }
  }

  private static void requireSchedule(boolean found, String name) {
    if (!found) {
      throw new BadRequest("no schedule named \"" + name + "\"");
    }
  }
}
