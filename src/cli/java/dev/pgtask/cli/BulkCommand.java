package dev.pgtask.cli;

import dev.pgtask.BulkResult;
import dev.pgtask.PgTask;
import dev.pgtask.TaskFilter;
import dev.pgtask.TaskState;
import java.io.PrintWriter;
import java.time.Duration;
import java.time.Instant;
import java.util.Locale;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;

/**
 * {@code pgtask retry|cancel|delete} with filters instead of an ID: the operation on every task the
 * filters match, in one statement, or with {@code --dry-run} what it would change; printed per state
 * of the matched tasks (changed, skipped) with the totals, or as JSON.
 */
final class BulkCommand {

  /** The filter options, as the usage errors name them. */
  static final String FILTERS = "--kind, --queue, --state, --tenant, --error-like, --since, --from, --until";

  private BulkCommand() {}

  /** The filters of a bulk operation, as options. */
  static final class Filters {
    @Option(names = "--kind", paramLabel = "KIND", description = "With filters instead of an ID: tasks of this kind.")
    String kind;

    @Option(names = "--queue", paramLabel = "QUEUE", description = "Tasks of this queue.")
    String queue;

    @Option(names = "--state", paramLabel = "STATE", converter = TasksCommand.StateConverter.class,
        description = "Tasks in this state: scheduled, waiting, available, running, retryable, completed, cancelled, discarded.")
    TaskState state;

    @Option(names = "--tenant", paramLabel = "TENANT", description = "Tasks of this tenant.")
    String tenant;

    @Option(names = "--error-like", paramLabel = "PATTERN",
        description = "Tasks whose last error matches this SQL LIKE pattern, e.g. '%timeout%'.")
    String errorLike;

    @Option(names = "--since", paramLabel = "DURATION", converter = DurationConverter.class,
        description = "Tasks active within this long before now (finished, else last started, else enqueued), e.g. 1h, 30m.")
    Duration since;

    @Option(names = "--from", paramLabel = "INSTANT", converter = InstantConverter.class,
        description = "Tasks last active at or after this instant (inclusive), ISO-8601 with a zone or offset, "
            + "e.g. 2026-12-04T10:00:00Z.")
    Instant from;

    @Option(names = "--until", paramLabel = "INSTANT", converter = InstantConverter.class,
        description = "Tasks last active before this instant (exclusive), e.g. 2026-12-04T11:00:00Z; after --from.")
    Instant until;

    @Option(names = "--dry-run", description = "Change nothing: print what the operation would change, per state.")
    boolean dryRun;

    /** Whether any filter (or --dry-run) is given. */
    boolean any() {
      return kind != null || queue != null || state != null || tenant != null || errorLike != null || since != null
          || from != null || until != null || dryRun;
    }

    /** The filter; a bad one (a --since not positive, a --from not before --until) is a usage error. */
    TaskFilter filter(CommandSpec spec) {
      if (since != null && (since.isZero() || since.isNegative())) {
        throw new CommandLine.ParameterException(spec.commandLine(), "--since must be positive, e.g. 1h");
      }
      if (from != null && until != null && !from.isBefore(until)) {
        throw new CommandLine.ParameterException(spec.commandLine(), "--from must be before --until (--from is "
            + "inclusive, --until exclusive): --from " + from + ", --until " + until);
      }
      return new TaskFilter(kind, queue, state, tenant, errorLike, since, from, until);
    }
  }

  /** One bulk operation of a command. */
  interface Operation {
    BulkResult apply(PgTask pgtask, TaskFilter filter, boolean dryRun);
  }

  /** Runs {@code operation} with {@code filters} (an ID given too, or no filter, is a usage error). */
  static int run(CommandSpec spec, ConnectionOptions connection, Filters filters, Long id, boolean json,
      Operation operation) {
    String name = spec.name();
    if (id != null) {
      throw new CommandLine.ParameterException(spec.commandLine(),
          "give either a task ID or filters (" + FILTERS + "), not both");
    }
    TaskFilter filter = filters.filter(spec);
    if (filter.isEmpty()) {
      throw new CommandLine.ParameterException(spec.commandLine(), "give a task ID, or at least one filter (" + FILTERS
          + "): " + name + " never applies to every task at once");
    }
    BulkResult r;
    try (OpsDatabase db = OpsDatabase.open(connection, "pgtask " + name)) {
      PgTask pgtask = PgTask.create(db.dataSource());
      r = operation.apply(pgtask, filter, filters.dryRun);
    }
    PrintWriter out = spec.commandLine().getOut();
    if (json) {
      var node = Formats.mapper().createObjectNode().put("dry_run", r.dryRun()).put("changed", r.changed())
          .put("skipped", r.skipped());
      var states = node.putArray("states");
      for (BulkResult.ForState s : r.states()) {
        states.addObject().put("state", s.state().sqlName()).put("changed", s.changed()).put("skipped", s.skipped());
      }
      Formats.printJson(out, node);
      return ExitCodes.OK;
    }
    TextTable t = new TextTable("STATE", r.dryRun() ? "WOULD_CHANGE" : "CHANGED", r.dryRun() ? "WOULD_SKIP" : "SKIPPED");
    for (BulkResult.ForState s : r.states()) {
      t.row(s.state().sqlName(), s.changed(), s.skipped());
    }
    if (!t.isEmpty()) {
      out.print(t.render());
    }
    String verb = switch (name) {
      case "retry" -> "retried";
      case "cancel" -> "cancelled (or asked to stop)";
      default -> "deleted";
    };
    out.println(r.dryRun()
        ? String.format(Locale.ROOT, "dry run: %d task(s) would be %s, %d skipped; nothing changed", r.changed(),
            verb, r.skipped())
        : String.format(Locale.ROOT, "%d task(s) %s, %d skipped", r.changed(), verb, r.skipped()));
    out.flush();
    return ExitCodes.OK;
  }
}
