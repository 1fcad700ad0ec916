package dev.pgtask.cli;

import dev.pgtask.TaskState;
import dev.pgtask.ops.TaskSummary;
import java.io.PrintWriter;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.stream.Collectors;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code pgtask tasks}: rows of {@code pgtask.tasks}, newest first, filtered by state, queue and kind. */
@Command(name = "tasks", mixinStandardHelpOptions = true, sortOptions = false,
    description = "Tasks, newest first (pgtask.tasks), filtered by state, queue and kind.")
public final class TasksCommand extends ReadCommand {

  /** Rows shown unless {@code --limit} says otherwise. */
  public static final int DEFAULT_LIMIT = 50;

  @Option(names = "--state", paramLabel = "STATE", converter = StateConverter.class,
      description = "Only tasks in this state: scheduled, waiting, available, running, retryable, completed, cancelled, discarded.")
  TaskState state;

  @Option(names = "--queue", paramLabel = "QUEUE", description = "Only tasks of this queue.")
  String queue;

  @Option(names = "--kind", paramLabel = "KIND", description = "Only tasks of this kind.")
  String kind;

  @Option(names = "--limit", paramLabel = "N", description = "At most N tasks (1 to 10000). Default: ${DEFAULT-VALUE}.")
  int limit = DEFAULT_LIMIT;

  @Option(names = "--json", description = "Print a JSON array of the pgtask.tasks rows.")
  boolean json;

  public TasksCommand() {
    super("pgtask tasks");
  }

  @Override
  public Integer call() {
    if (limit < 1 || limit > 10_000) {
      throw new CommandLine.ParameterException(spec.commandLine(),
          "Invalid value for option '--limit': " + limit + " is not between 1 and 10000");
    }
    return super.call();
  }

  /** Reads and prints the tasks; {@code limit} has been checked (by {@link #call()} or {@link ReadCommandLine}). */
  @Override
  void print(OpsConnection db, PrintWriter out) {
    List<TaskSummary> tasks = db.read(ops -> ops.tasks(state, queue, kind, limit));
    if (json) {
      Formats.printJson(out, g -> Formats.write(g, tasks));
      return;
    }
    TextTable t = new TextTable("ID", "KIND", "QUEUE", "TENANT", "STATE", "ATTEMPT", "PRIORITY", "RUN_AT",
        "FINISHED_AT", "LAST_ERROR");
    for (TaskSummary r : tasks) {
      t.row(r.id(), r.kind(), r.queue(), r.tenant(), r.state(), r.attempt() + "/" + r.maxAttempts(), r.priority(),
          Formats.text(r.runAt()), Formats.text(r.finishedAt()), abbreviate(r.lastError(), 60));
    }
    out.print(t.isEmpty() ? "no tasks match\n" : t.render());
  }

  private static String abbreviate(String s, int max) {
    if (s == null) {
      return null;
    }
    String one = Main.oneLine(s);
    return one.length() <= max ? one : one.substring(0, max - 1) + "…";
  }

  /** Parses a state as {@code pgtask.tasks} writes it; names the valid ones otherwise. */
  static final class StateConverter implements CommandLine.ITypeConverter<TaskState> {
    @Override
    public TaskState convert(String value) {
      try {
        return TaskState.fromSql(value.trim());
      } catch (IllegalArgumentException e) {
        throw new CommandLine.TypeConversionException("'" + value + "' is not a task state; use one of "
            + Arrays.stream(TaskState.values()).map(s -> s.name().toLowerCase(Locale.ROOT)).collect(Collectors.joining(", ")));
      }
    }
  }
}
