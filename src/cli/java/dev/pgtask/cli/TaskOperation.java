package dev.pgtask.cli;

import dev.pgtask.CancelResult;
import dev.pgtask.PgTask;
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
 * transaction holds it), 6 the task's state does not allow it.
 */
abstract class TaskOperation implements Callable<Integer> {

  @Mixin
  ConnectionOptions connection;

  @Parameters(index = "0", paramLabel = "ID", description = "The task's id.")
  long id;

  @Option(names = "--json", description = "Print {\"id\": N, \"result\": \"...\"}.")
  boolean json;

  @Spec
  CommandSpec spec;

  /** Runs the operation; returns its result word and a sentence for humans. */
  abstract String[] apply(PgTask pgtask, long id);

  @Override
  public Integer call() {
    String name = spec.name();
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
      description = "Cancel a task: a queued one at once; a running one is interrupted and rolled back by its worker.",
      footer = "%nExit codes: 0 cancelled or cancel requested, 4 no such task, 5 another transaction holds the task,"
          + " 6 the task is already finished.")
  static final class Cancel extends TaskOperation {
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
      description = "Make a retryable, discarded or cancelled task available now, with at least one attempt left.",
      footer = "%nExit codes: 0 available again, 4 no such task, 5 the task is running, 6 the task is not failed or cancelled.")
  static final class Retry extends TaskOperation {
    @Override
    String[] apply(PgTask pgtask, long id) {
      pgtask.retry(id);
      return new String[] {"retried", "task " + id + " is available again"};
    }
  }

  /** {@code pgtask delete ID}. */
  @Command(name = "delete", mixinStandardHelpOptions = true,
      description = "Delete a task that is not running.",
      footer = "%nExit codes: 0 deleted, 4 no such task, 5 the task is running.")
  static final class Delete extends TaskOperation {
    @Override
    String[] apply(PgTask pgtask, long id) {
      pgtask.delete(id);
      return new String[] {"deleted", "task " + id + " deleted"};
    }
  }
}
