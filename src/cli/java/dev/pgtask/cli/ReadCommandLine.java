package dev.pgtask.cli;

import dev.pgtask.TaskState;
import java.io.BufferedWriter;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.Charset;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The read commands ({@code status}, {@code locks}, {@code workers}, {@code tasks}, {@code show}) run without
 * picocli when their arguments are plain options: picocli builds a command by reflection over its
 * class and its annotations, and registers its type converters, which was about a third of what
 * such a command cost after the JVM had started (docs/benchmarks.md, "Command line").
 *
 * <p>This parser accepts only what it can decide exactly as picocli does: each option of the
 * command at most once, as {@code --opt value} or {@code --opt=value}, a value that does not start
 * with {@code -}, {@code --json} and {@code --verbose} alone, {@code show}'s task id once (digits
 * only, no leading zero), a {@code --state} that is a task
 * state, a {@code --limit} of 1 to 10000 written without a sign or a leading zero, and no argument
 * starting with {@code @} (picocli's argument files). For anything else (help, version, a usage
 * error, an argument file) it returns {@code null} and picocli parses the arguments, so that every
 * message about the command line stays picocli's. A command it runs prints what it prints under
 * picocli, on writers made as picocli makes them, and fails with the same one line and exit code
 * ({@code ReadCommandLineTest} compares the two).
 */
final class ReadCommandLine {

  private static final Set<String> CONNECTION = Set.of("--url");
  private static final Set<String> TASKS = Set.of("--url", "--state", "--queue", "--kind", "--limit");
  private static final Pattern LIMIT = Pattern.compile("[1-9][0-9]{0,4}");
  /** A task id as {@code show} takes it: digits, no sign, no leading zero, within a long. */
  private static final Pattern ID = Pattern.compile("0|[1-9][0-9]{0,17}");

  /** The key of {@code show}'s task id among the parsed values. */
  private static final String ID_ARGUMENT = "ID";

  private ReadCommandLine() {}

  /** Runs {@code args} on stdout and stderr; the exit code, or {@code null} when picocli must parse them. */
  static Integer run(String[] args) {
    Parsed parsed = parse(args);
    return parsed == null ? null
        : parsed.run(writer(System.out, "sun.stdout.encoding"), writer(System.err, "sun.stderr.encoding"));
  }

  /** Runs {@code args} printing on {@code out} and {@code err}; the exit code, or {@code null} as {@link #run(String[])}. */
  static Integer run(String[] args, PrintWriter out, PrintWriter err) {
    Parsed parsed = parse(args);
    return parsed == null ? null : parsed.run(out, err);
  }

  /** A read command with its options, ready to run. */
  private record Parsed(String name, Map<String, String> values, boolean json, boolean verbose) {

    int run(PrintWriter out, PrintWriter err) {
      Main.configureLogging(verbose);
      ConnectionOptions connection = new ConnectionOptions();
      connection.url = values.get("--url");
      int code;
      try {
        code = switch (name) {
          case "status" -> {
            StatusCommand c = new StatusCommand();
            c.connection = connection;
            c.json = json;
            yield c.call(out);
          }
          case "locks" -> {
            LocksCommand c = new LocksCommand();
            c.connection = connection;
            c.json = json;
            yield c.call(out);
          }
          case "workers" -> {
            WorkersCommand c = new WorkersCommand();
            c.connection = connection;
            c.json = json;
            yield c.call(out);
          }
          case "show" -> {
            ShowCommand c = new ShowCommand();
            c.connection = connection;
            c.json = json;
            c.id = Long.parseLong(values.get(ID_ARGUMENT));
            yield c.call(out);
          }
          default -> {
            TasksCommand c = new TasksCommand();
            c.connection = connection;
            c.json = json;
            String state = values.get("--state");
            c.state = state == null ? null : TaskState.fromSql(state.trim());
            c.queue = values.get("--queue");
            c.kind = values.get("--kind");
            String limit = values.get("--limit");
            c.limit = limit == null ? TasksCommand.DEFAULT_LIMIT : Integer.parseInt(limit);
            yield c.call(out);
          }
        };
      } catch (Exception e) {
        code = Main.onFailure(e, "pgtask " + name, err, verbose);
      }
      out.flush();
      err.flush();
      return code;
    }
  }

  /** The command {@code args} name with its options, or {@code null} when picocli must parse them. */
  private static Parsed parse(String[] args) {
    if (args.length == 0) {
      return null;
    }
    String name = args[0];
    Set<String> options = switch (name) {
      case "status", "locks", "workers" -> CONNECTION;
      case "tasks" -> TASKS;
      case "show" -> CONNECTION;
      default -> null;
    };
    if (options == null) {
      return null;
    }
    for (String a : args) {
      if (a.startsWith("@")) {
        return null;
      }
    }
    Map<String, String> values = new HashMap<>();
    boolean json = false;
    boolean verbose = false;
    for (int i = 1; i < args.length; i++) {
      String a = args[i];
      if (a.equals("--json") || a.equals("--verbose")) {
        if (a.equals("--json") ? json : verbose) {
          return null;
        }
        json |= a.equals("--json");
        verbose |= a.equals("--verbose");
        continue;
      }
      if (name.equals("show") && !a.startsWith("-")) {
        // the task id, once
        if (!ID.matcher(a).matches() || values.putIfAbsent(ID_ARGUMENT, a) != null) {
          return null;
        }
        continue;
      }
      String option;
      String value;
      int eq = a.indexOf('=');
      if (a.startsWith("--") && eq > 2) {
        option = a.substring(0, eq);
        value = a.substring(eq + 1);
      } else {
        option = a;
        if (i + 1 >= args.length) {
          return null;
        }
        value = args[++i];
        if (value.startsWith("-")) {
          return null;
        }
      }
      if (!options.contains(option) || values.putIfAbsent(option, value) != null) {
        return null;
      }
    }
    if (name.equals("show") && !values.containsKey(ID_ARGUMENT)) {
      return null;
    }
    String state = values.get("--state");
    if (state != null && !isTaskState(state)) {
      return null;
    }
    String limit = values.get("--limit");
    if (limit != null && !(LIMIT.matcher(limit).matches() && Integer.parseInt(limit) <= 10_000)) {
      return null;
    }
    return new Parsed(name, values, json, verbose);
  }

  private static boolean isTaskState(String value) {
    try {
      TaskState.fromSql(value.trim());
      return true;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  /** A writer on {@code stream} as picocli makes one for its {@code getOut()} and {@code getErr()}. */
  private static PrintWriter writer(OutputStream stream, String encodingProperty) {
    String name = System.getProperty(encodingProperty);
    Charset charset = Charset.defaultCharset();
    if (name != null) {
      try {
        charset = Charset.forName("cp65001".equalsIgnoreCase(name) ? "UTF-8" : name);
      } catch (Exception e) {
        // picocli falls back to the default charset too
      }
    }
    return new PrintWriter(new BufferedWriter(new OutputStreamWriter(stream, charset)), true);
  }
}
