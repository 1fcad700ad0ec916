package dev.pgtask.cli;

import dev.pgtask.BulkResult;
import dev.pgtask.CancelResult;
import dev.pgtask.PgTask;
import dev.pgtask.TaskFilter;
import java.io.PrintWriter;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code pgtask cancel|retry|delete ID}: one operation on one task through {@link PgTask}. None of
 * them waits on a running task. Exit codes: 4 no such task, 5 the task is running (or another
 * transaction holds it), 6 the task's state does not allow it. Without an ID, with filters instead
 * ({@code --kind}, {@code --queue}, {@code --state}, {@code --tenant}, {@code --error-like},
 * {@code --since}, {@code --from}, {@code --until}): the same operation on every task they match, in one statement
 * ({@link PgTask#retryTasks} and its siblings), with {@code --dry-run} to see first what it would
 * change ({@link BulkCommand} prints it).
 */
abstract class TaskOperation implements Callable<Integer> {

  @Mixin
  ConnectionOptions connection;

  @Parameters(index = "0", arity = "0..1", paramLabel = "ID",
      description = "The task's id. Without it, the filters below choose the tasks.")
  Long id;

  @Mixin
  BulkCommand.Filters filters;

  @Option(names = "--json", description = "Print {\"id\": N, \"result\": \"...\"}; with filters, the counts per state.")
  boolean json;

  @Spec
  CommandSpec spec;

  /** Runs the operation; returns its result word and a sentence for humans. */
  abstract String[] apply(PgTask pgtask, long id);

  /** Runs the operation on every task {@code filter} matches. */
  abstract BulkResult applyAll(PgTask pgtask, TaskFilter filter, boolean dryRun);

  @Override
  public Integer call() {
    String name = spec.name();
    if (id == null || filters.any()) {
      return BulkCommand.run(spec, connection, filters, id, json, this::applyAll);
    }
    String[] result;
    try (OpsDatabase db = OpsDatabase.open(connection, "pgtask " + name)) {
      PgTask pgtask = PgTask.create(db.dataSource());
      result = db.run(dsl -> apply(pgtask, id));
    }
    PrintWriter out = spec.commandLine().getOut();
    if (json) {
      Formats.printJson(out, Formats.mapper().createObjectNode().put("id", id).put("result", result[0]));
    } else {
      out.println(TerminalText.escape(result[1]));
      out.flush();
    }
    return ExitCodes.OK;
  }

  /** {@code pgtask cancel ID}. */
  @Command(name = "cancel", mixinStandardHelpOptions = true,
      description = "Cancel a task (or every task the filters match): a queued one at once; a running one is "
          + "interrupted and rolled back by its worker.",
      footer = "%nExit codes: 0 cancelled or cancel requested, 4 no such task, 5 another transaction holds the task,"
          + " 6 the task is already finished. With filters: 0 (finished tasks are skipped and counted).")
  static final class Cancel extends TaskOperation {
    @Override
    BulkResult applyAll(PgTask pgtask, TaskFilter filter, boolean dryRun) {
      return pgtask.cancelTasks(filter, dryRun);
    }

    @Override
    String[] apply(PgTask pgtask, long id) {
      CancelResult r = pgtask.cancel(id);
      return r == CancelResult.CANCELLED
          ? new String[] {"cancelled", "task " + id + " cancelled"}
          : new String[] {r.name().toLowerCase(Locale.ROOT),
              "task " + id + " is running: its worker was told to interrupt it and roll back (watch its state)"};
    }
  }

  /** {@code pgtask retry ID}. */
  @Command(name = "retry", mixinStandardHelpOptions = true,
      description = "Make a retryable, discarded or cancelled task (or every such task the filters match) available "
          + "now, with at least one attempt left.",
      footer = "%nExit codes: 0 available again, 4 no such task, 5 the task is running, 6 the task is not failed or cancelled."
          + " With filters: 0 (tasks in other states are skipped and counted).")
  static final class Retry extends TaskOperation {
    @Override
    BulkResult applyAll(PgTask pgtask, TaskFilter filter, boolean dryRun) {
      return pgtask.retryTasks(filter, dryRun);
    }

    @Override
    String[] apply(PgTask pgtask, long id) {
      pgtask.retry(id);
      return new String[] {"retried", "task " + id + " is available again"};
    }
  }

  /** {@code pgtask delete ID}. */
  @Command(name = "delete", mixinStandardHelpOptions = true,
      description = "Delete a task that is not running (or every such task the filters match).",
      footer = "%nExit codes: 0 deleted, 4 no such task, 5 the task is running. With filters: 0 (running tasks are "
          + "skipped and counted).")
  static final class Delete extends TaskOperation {
    @Override
    BulkResult applyAll(PgTask pgtask, TaskFilter filter, boolean dryRun) {
      return pgtask.deleteTasks(filter, dryRun);
    }

    @Override
    String[] apply(PgTask pgtask, long id) {
      pgtask.delete(id);
      return new String[] {"deleted", "task " + id + " deleted"};
    }
  }
}
