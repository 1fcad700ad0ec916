package dev.pgtask.cli;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import dev.pgtask.ops.TaskAttempt;
import dev.pgtask.ops.TaskDetail;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.Optional;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code pgtask show ID}: one task with its payload, its recorded attempts and their full errors
 * (stack traces and causes), and why it is or is not running ({@code pgtask.task_detail}).
 */
@Command(name = "show", mixinStandardHelpOptions = true,
    description = "One task: its state, payload, every recorded attempt with its full error (stack trace and causes), "
        + "and why it is or is not running (pgtask.task_detail).",
    footer = "%nExit codes: 0 shown, 4 no such task.")
public final class ShowCommand extends ReadCommand {

  @Parameters(index = "0", paramLabel = "ID", description = "The task's id.")
  long id;

  @Option(names = "--json", description = "Print pgtask.task_detail(ID) as JSON: the task's fields, payload, "
      + "error history, attempts and explanation.")
  boolean json;

  /** The exit code of the last {@link #print}: {@link ExitCodes#NOT_FOUND} when there was no such task. */
  private int code = ExitCodes.OK;

  public ShowCommand() {
    super("pgtask show");
  }

  @Override
  int call(PrintWriter out) {
    int ran = super.call(out);
    return ran == ExitCodes.OK ? code : ran;
  }

  @Override
  void print(OpsConnection db, PrintWriter out) {
    Optional<TaskDetail> found = db.read(ops -> ops.find(id));
    if (found.isEmpty()) {
      code = ExitCodes.NOT_FOUND;
      if (json) {
        out.println("null");
      } else {
        out.println("task " + id + " does not exist: it was never enqueued, or it was deleted (retention deletes "
            + "finished tasks once their retention has passed)");
      }
      return;
    }
    TaskDetail t = found.get();
    if (json) {
      // the database's document, indented; copied token by token (Jackson's streaming API only)
      Formats.printJson(out, g -> {
        try (JsonParser p = new JsonFactory().createParser(t.json())) {
          p.nextToken();
          g.copyCurrentStructure(p);
        }
      });
      return;
    }
    out.println("task " + t.id() + ": " + esc(t.kind()) + " in queue " + esc(t.queue())
        + (t.tenant() == null ? "" : ", tenant " + esc(t.tenant())));
    out.println("state:       " + t.state() + " (attempt " + t.attempt() + " of " + t.maxAttempts() + ", priority "
        + t.priority() + ")");
    out.println("run at:      " + Formats.text(t.runAt()));
    out.println("created:     " + Formats.text(t.createdAt()));
    if (t.finishedAt() != null) {
      out.println("finished:    " + Formats.text(t.finishedAt()));
    }
    if (t.worker() != null) {
      out.println("worker:      " + esc(t.worker()));
    }
    out.println("explanation: " + esc(t.explanation()));
    if (t.lastError() != null) {
      out.println("last error:  " + esc(Main.oneLine(t.lastError())));
    }
    out.println("payload:     " + esc(t.payload()));
    if (t.attempts().isEmpty()) {
      out.println("attempts:    none recorded (pgtask records the attempts that did not complete)");
      return;
    }
    out.println("attempts:");
    for (TaskAttempt a : t.attempts()) {
      Duration took = a.startedAt() == null || a.finishedAt() == null ? null
          : Duration.between(a.startedAt(), a.finishedAt());
      out.println("  #" + a.attempt() + " " + a.outcome() + (a.worker() == null ? "" : " on " + esc(a.worker()))
          + " at " + Formats.text(a.finishedAt()) + (took == null ? "" : " after " + Formats.duration(took)));
      String text = a.errorDetail() != null ? a.errorDetail() : a.error();
      if (text != null) {
        for (String line : text.split("\\R", -1)) {
          out.println("      " + esc(line.replace("\t", "    ")));
        }
      }
    }
  }

  private static String esc(String s) {
    return TerminalText.escape(s);
  }
}
