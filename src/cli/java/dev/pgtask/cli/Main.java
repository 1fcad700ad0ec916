package dev.pgtask.cli;

import dev.pgtask.internal.Secrets;
import java.io.PrintWriter;
import java.sql.SQLException;
import java.util.Locale;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ParseResult;
import picocli.CommandLine.ScopeType;

/**
 * {@code bin/pgtask}: the command line of pgtask. Each subcommand is its own class, registered in
 * {@link #SUBCOMMANDS}; it implements {@code Callable<Integer>} and returns an {@link ExitCodes}
 * value or throws ({@link CliException} for an expected failure with its own code). Errors are one
 * line on stderr; {@code --verbose} adds the stack trace and debug logging.
 */
@Command(
    name = "pgtask",
    mixinStandardHelpOptions = true,
    versionProvider = Main.Version.class,
    description = "A PostgreSQL-native task queue: the demo, migrations, workers, and what operators need.",
    footerHeading = "%nConnection:%n",
    footer = {
        "  --url, else PGTASK_URL, else the libpq variables PGHOST PGPORT PGDATABASE",
        "  PGUSER PGPASSWORD (defaults: localhost, 5432, the OS user, database = user).",
        "  URLs: jdbc:postgresql://HOST:PORT/DB?user=U or postgresql://U@HOST:PORT/DB.",
        // one line each, within the 80 columns of picocli's help: a longer line would be wrapped mid-sentence
        "%nExit codes:",
        "  0  ok",
        "  1  failed ('pgtask demo': an invariant failed)",
        "  2  usage error or invalid input, such as an invalid schedule (nothing stored)",
        "  3  cannot connect to the database",
        "  4  no such task, or no such schedule",
        "  5  the task is running (or another transaction holds it)",
        "  6  the task's state does not allow the operation",
        "%nWith --json, read commands print JSON on stdout; errors stay one line on stderr."},
    subcommandsRepeatable = false)
public final class Main implements Runnable {

  /** The subcommands, in help order. Add new commands here. */
  static final Class<?>[] SUBCOMMANDS = {DemoCommand.class, MigrateCommand.class, WorkerCommand.class,
      StatusCommand.class, LocksCommand.class, WorkersCommand.class, TasksCommand.class, EnqueueCommand.class,
      ShowCommand.class, TaskOperation.Cancel.class, TaskOperation.Retry.class, TaskOperation.Delete.class,
      QueueCommands.Pause.class, QueueCommands.Resume.class, LimitCommands.List.class, LimitCommands.Limits.class,
      ExplainCommand.class,
      ScheduleCommands.List.class, ScheduleCommands.Declare.class, ScheduleCommands.Unschedule.class,
      DashboardCommand.class, BenchCommand.class};

  @Option(names = "--verbose", scope = ScopeType.INHERIT,
      description = "Debug logging, and stack traces with errors.")
  boolean verbose;

  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  /** Runs the CLI and exits the JVM with the command's exit code. */
  public static void main(String[] args) {
    System.exit(run(args));
  }

  /**
   * Runs the CLI in this JVM and returns the exit code (for tests and embedding). A read command
   * with plain options ({@link ReadCommandLine}) runs without picocli; everything else, help and
   * usage errors included, goes through {@link #commandLine(String...)}.
   */
  public static int run(String... args) {
    Integer code = ReadCommandLine.run(args);
    return code != null ? code : commandLine(args).execute(args);
  }

  /** A configured command line: subcommands, one-line error handling, exit codes. */
  public static CommandLine commandLine() {
    return commandLine(SUBCOMMANDS);
  }

  /**
   * The command line that runs {@code args}: when they start with a subcommand's name, only that
   * subcommand is built. picocli builds a command by reflection over its class (every field and
   * method signature, which loads the types they name); building all of them would load jOOQ,
   * HikariCP and Jackson classes for a command that uses none. What the command prints, its errors
   * and exit codes are those of {@link #commandLine()} ({@code MainTest} compares them).
   */
  public static CommandLine commandLine(String... args) {
    Class<?> named = args.length == 0 ? null : subcommandNamed(args[0]);
    return named == null ? commandLine(SUBCOMMANDS) : commandLine(new Class<?>[] {named});
  }

  /** The subcommand class whose {@code @Command} name or alias is {@code name}, or {@code null}. */
  static Class<?> subcommandNamed(String name) {
    for (Class<?> sub : SUBCOMMANDS) {
      Command c = sub.getAnnotation(Command.class);
      if (c.name().equals(name) || java.util.Arrays.asList(c.aliases()).contains(name)) {
        return sub;
      }
    }
    return null;
  }

  private static CommandLine commandLine(Class<?>[] subcommands) {
    Main main = new Main();
    CommandLine cmd = new CommandLine(main);
    for (Class<?> sub : subcommands) {
      cmd.addSubcommand(sub);
    }
    cmd.addSubcommand(new CommandLine.HelpCommand());
    cmd.setCaseInsensitiveEnumValuesAllowed(true);
    cmd.setExecutionStrategy(parseResult -> {
      configureLogging(main.verbose || verboseAnywhere(parseResult));
      return new CommandLine.RunLast().execute(parseResult);
    });
    cmd.setParameterExceptionHandler(Main::onUsageError);
    cmd.setExecutionExceptionHandler((e, command, parseResult) ->
        onFailure(e, command, main.verbose || verboseAnywhere(parseResult)));
    return cmd;
  }

  @Override
  public void run() {
    // "pgtask" alone: show what it can do
    spec.commandLine().usage(spec.commandLine().getOut());
  }

  private static int onUsageError(ParameterException e, String[] args) {
    CommandLine cmd = e.getCommandLine();
    PrintWriter err = cmd.getErr();
    String name = cmd.getCommandSpec().qualifiedName();
    err.println(name + ": " + TerminalText.escape(oneLine(Secrets.redact(e.getMessage()))) + " (see '" + name + " --help')");
    err.flush();
    return ExitCodes.USAGE;
  }

  private static int onFailure(Exception e, CommandLine command, boolean verbose) {
    return onFailure(e, command.getCommandSpec().qualifiedName(), command.getErr(), verbose);
  }

  /** Prints {@code name: message} for a failed command on {@code err} and returns its exit code. */
  static int onFailure(Exception e, String name, PrintWriter err, boolean verbose) {
    int code;
    String message;
    CliException cli = findCause(e, CliException.class);
    if (cli != null) {
      code = cli.exitCode();
      message = cli.getMessage();
    } else if (isConnectionFailure(e)) {
      code = ExitCodes.CANNOT_CONNECT;
      message = "cannot connect: " + describe(findCause(e, SQLException.class));
    } else {
      code = ExitCodes.FAILURE;
      message = describe(e);
    }
    // a URL in a message (the driver's, the pool's, Flyway's) never shows its password
    err.println(name + ": " + TerminalText.escape(oneLine(Secrets.redact(message))));
    if (verbose) {
      e.printStackTrace(err);
    }
    err.flush();
    return code;
  }

  /** True when the failure is about reaching the server: network, login, missing database. */
  static boolean isConnectionFailure(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof SQLException s && s.getSQLState() != null) {
        String state = s.getSQLState();
        if (state.startsWith("08") || state.startsWith("28") || state.equals("3D000") || state.equals("57P03")) {
          return true;
        }
      }
      if (t.getCause() == t) {
        break;
      }
    }
    return false;
  }

  /** The first cause of {@code type} in the chain of {@code e} (including {@code e}), or {@code null}. */
  static <T extends Throwable> T findCause(Throwable e, Class<T> type) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (type.isInstance(t)) {
        return type.cast(t);
      }
      if (t.getCause() == t) {
        break;
      }
    }
    return null;
  }

  /** A readable message for an unexpected exception: its own message, or its type and its cause's. */
  static String describe(Throwable e) {
    String msg = e.getMessage();
    if (msg == null || msg.isBlank()) {
      Throwable cause = e.getCause();
      return e.getClass().getSimpleName() + (cause != null ? ": " + describe(cause) : "");
    }
    return msg;
  }

  /** Collapses a multi-line message into one line. */
  static String oneLine(String message) {
    if (message == null) {
      return "";
    }
    return message.strip().replaceAll("\\s*[\\r\\n]+\\s*", "; ").replaceAll("\\s{2,}", " ");
  }

  private static boolean verboseAnywhere(ParseResult parseResult) {
    for (ParseResult p = parseResult; p != null; p = p.subcommand()) {
      if (p.hasMatchedOption("--verbose")) {
        return true;
      }
    }
    return false;
  }

  /**
   * Configures slf4j-simple (the CLI's logger; the library itself never configures logging):
   * timestamps, one line per event, pool internals quiet unless {@code --verbose}. Explicit
   * {@code -Dorg.slf4j.simpleLogger.*} settings win.
   */
  static void configureLogging(boolean verbose) {
    String p = "org.slf4j.simpleLogger.";
    setDefault(p + "showDateTime", "true");
    setDefault(p + "dateTimeFormat", "HH:mm:ss.SSS");
    setDefault(p + "showShortLogName", "true");
    setDefault(p + "levelInBrackets", "false");
    setDefault(p + "defaultLogLevel", verbose ? "debug" : "info");
    setDefault(p + "log.com.zaxxer.hikari", verbose ? "info" : "warn");
    setDefault(p + "log.org.flywaydb", verbose ? "info" : "warn");
    setDefault(p + "log.org.jooq", verbose ? "info" : "warn");
    setDefault(p + "log.org.postgresql", verbose ? "info" : "warn");
    setDefault(p + "log.io.zonky", verbose ? "info" : "warn");
  }

  private static void setDefault(String key, String value) {
    if (System.getProperty(key) == null) {
      System.setProperty(key, value);
    }
  }

  /** The version from the jar's Maven metadata (or "dev" when run from classes). */
  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      String v = null;
      try (var in = Main.class.getResourceAsStream("/META-INF/maven/dev.pgtask/pgtask/pom.properties")) {
        if (in != null) {
          java.util.Properties p = new java.util.Properties();
          p.load(in);
          v = p.getProperty("version");
        }
      } catch (java.io.IOException e) {
        // no version then
      }
      return new String[] {"pgtask " + (v == null ? "dev" : v) + " (Java " + System.getProperty("java.version")
          + ", " + System.getProperty("os.name").toLowerCase(Locale.ROOT) + ")"};
    }
  }
}
