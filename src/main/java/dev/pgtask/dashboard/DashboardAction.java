package dev.pgtask.dashboard;

/**
 * What an operator can do from the dashboard. Each is a POST that a {@link DashboardAccess} must
 * allow; without one the dashboard is read-only and shows no action.
 */
public enum DashboardAction {
  /** Retry one task ({@link dev.pgtask.PgTask#retry}). */
  RETRY_TASK,
  /** Cancel one task ({@link dev.pgtask.PgTask#cancel}). */
  CANCEL_TASK,
  /** Delete one task ({@link dev.pgtask.PgTask#delete}). */
  DELETE_TASK,
  /** Pause a queue ({@link dev.pgtask.PgTask#pauseQueue}). */
  PAUSE_QUEUE,
  /** Resume a queue ({@link dev.pgtask.PgTask#resumeQueue}). */
  RESUME_QUEUE,
  /** Pause a schedule ({@link dev.pgtask.PgTask#pauseSchedule}). */
  PAUSE_SCHEDULE,
  /** Resume a schedule ({@link dev.pgtask.PgTask#resumeSchedule}). */
  RESUME_SCHEDULE,
  /** Retry every task a filter matches ({@link dev.pgtask.PgTask#retryTasks}); also its dry run. */
  BULK_RETRY,
  /** Cancel every task a filter matches ({@link dev.pgtask.PgTask#cancelTasks}); also its dry run. */
  BULK_CANCEL,
  /** Delete every task a filter matches ({@link dev.pgtask.PgTask#deleteTasks}); also its dry run. */
  BULK_DELETE
}
