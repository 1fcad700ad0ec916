package dev.pgtask.cli;

import dev.pgtask.TaskExplanation;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code pgtask explain ID}: why a task is or is not running, in one sentence ({@code pgtask.explain_task}). */
@Command(name = "explain", mixinStandardHelpOptions = true,
    description = "Why a task is or is not running, in one sentence, from the database's own state.",
    footer = "%nExit codes: 0 explained, 4 no such task (the sentence says so).")
public final class ExplainCommand implements Callable<Integer> {

  @Mixin
  ConnectionOptions connection;

  @Parameters(index = "0", paramLabel = "ID", description = "The task's id.")
  long id;

  @Option(names = "--json", description = "Print the explanation as JSON: reason, sentence and the fields it names.")
  boolean json;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() {
    TaskExplanation e;
    try (OpsConnection db = OpsConnection.open(connection, "pgtask explain")) {
      e = db.read(ops -> ops.explain(id));
    }
    PrintWriter out = spec.commandLine().getOut();
    if (json) {
      Formats.printJson(out, e.details());
    } else {
      out.println(TerminalText.escape(e.sentence()));
      out.flush();
    }
    return e.notFound() ? ExitCodes.NOT_FOUND : ExitCodes.OK;
  }
}
