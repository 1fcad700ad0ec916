package dev.pgtask.cli;

import dev.pgtask.InvalidScheduleException;
import dev.pgtask.PgTask;
import dev.pgtask.Schedule;
import dev.pgtask.TaskOptions;
import dev.pgtask.ops.PgTaskOperations;
import dev.pgtask.ops.ScheduleStatus;
import dev.pgtask.internal.sql.ScheduleQueries;
import dev.pgtask.internal.sql.gen.tables.records.SchedulesRecord;
import java.io.PrintWriter;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.Callable;
import java.util.function.BiPredicate;
import org.jooq.Result;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * The schedule commands: {@code pgtask schedules} (list; {@code schedules pause NAME},
 * {@code schedules resume NAME}), {@code pgtask schedule NAME CRON KIND [options]} (declare or
 * change) and {@code pgtask unschedule NAME}. Exit codes: 2 an invalid declaration (nothing
 * stored), 4 no such schedule.
 */
final class ScheduleCommands {

  private ScheduleCommands() {}

  /** {@code pgtask schedules}: the view pgtask.schedules. */
  @Command(name = "schedules", mixinStandardHelpOptions = true,
      description = "Recurring tasks (pgtask.schedules): cron, zone, next and last fire, last task and its state.",
      subcommands = {Pause.class, Resume.class},
      footer = "%nSubcommands pause NAME / resume NAME: exit 4 when there is no such schedule.")
  static final class List extends ReadCommand {

    @Option(names = "--json", description = "Print a JSON array of the pgtask.schedules rows.")
    boolean json;

    List() {
      super("pgtask schedules");
    }

    @Override
    void print(OpsConnection db, PrintWriter out) {
      java.util.List<ScheduleStatus> rows = db.read(PgTaskOperations::schedules);
      if (json) {
        Formats.printJson(out, g -> Formats.write(g, rows));
        return;
      }
      TextTable t = new TextTable("NAME", "CRON", "ZONE", "KIND", "QUEUE", "TENANT", "PAUSED", "NEXT_FIRE_AT",
          "LAST_FIRE_AT", "LAST_TASK", "LAST_STATE", "FIRED");
      for (ScheduleStatus r : rows) {
        t.row(r.name(), r.cron(), r.timeZone(), r.kind(), r.queue(), Formats.text(r.tenant()),
            r.paused() ? "yes" : r.queuePaused() ? "queue" : "no", Formats.text(r.nextFireAt()),
            Formats.text(r.lastFireAt()), Formats.text(r.lastTaskId()), Formats.text(r.lastTaskState()), r.fired());
      }
      out.print(t.isEmpty() ? "no schedules\n" : t.render());
    }
  }

  /** Pause or resume one schedule. */
  abstract static class Toggle implements Callable<Integer> {
    @Mixin
    ConnectionOptions connection;

    @Parameters(index = "0", paramLabel = "NAME", description = "The schedule's name.")
    String name;

    @Spec
    CommandSpec spec;

    abstract BiPredicate<PgTask, String> operation();

    abstract String done();

    @Override
    public Integer call() {
      boolean exists;
      try (OpsDatabase db = OpsDatabase.open(connection, "pgtask schedules " + spec.name())) {
        PgTask pgtask = PgTask.create(db.dataSource());
        exists = db.run(dsl -> operation().test(pgtask, name));
      }
      if (!exists) {
        throw new CliException(ExitCodes.NOT_FOUND, "no schedule named '" + name + "'");
      }
      spec.commandLine().getOut().println("schedule " + TerminalText.escape(name) + " " + done());
      spec.commandLine().getOut().flush();
      return ExitCodes.OK;
    }
  }

  /** {@code pgtask schedules pause NAME}. */
  @Command(name = "pause", mixinStandardHelpOptions = true,
      description = "Pause a schedule: it fires nothing until resumed.")
  static final class Pause extends Toggle {
    @Override
    BiPredicate<PgTask, String> operation() {
      return PgTask::pauseSchedule;
    }

    @Override
    String done() {
      return "paused";
    }
  }

  /** {@code pgtask schedules resume NAME}. */
  @Command(name = "resume", mixinStandardHelpOptions = true,
      description = "Resume a paused schedule from its next fire time after now (fires while paused are not made up).")
  static final class Resume extends Toggle {
    @Override
    BiPredicate<PgTask, String> operation() {
      return PgTask::resumeSchedule;
    }

    @Override
    String done() {
      return "resumed";
    }
  }

  /** {@code pgtask schedule NAME CRON KIND}: declare or change a schedule. */
  @Command(name = "schedule", mixinStandardHelpOptions = true, sortOptions = false,
      description = {"Declare a recurring task, or change the schedule of that name (idempotent); prints the next fire time.",
          "CRON: 5 fields (minute hour day-of-month month day-of-week), 6 with seconds first, or @hourly, @daily, ..."},
      footer = {"%nExample: pgtask schedule nightly-report '0 30 2 * * *' report.build --zone Europe/Berlin --catch-up 1",
          "%nExit codes: 0 declared, 2 invalid (nothing stored)."})
  static final class Declare implements Callable<Integer> {

    @Mixin
    ConnectionOptions connection;

    @Parameters(index = "0", paramLabel = "NAME", description = "The schedule's name (its identity).")
    String name;

    @Parameters(index = "1", paramLabel = "CRON", description = "The cron expression (quote it).")
    String cron;

    @Parameters(index = "2", paramLabel = "KIND", description = "The kind of the tasks it enqueues.")
    String kind;

    @Option(names = "--payload", paramLabel = "JSON", description = "The tasks' payload, a JSON object. Default: {}.")
    String payload;

    @Option(names = "--queue", paramLabel = "QUEUE", description = "Default: " + TaskOptions.DEFAULT_QUEUE + ".")
    String queue = TaskOptions.DEFAULT_QUEUE;

    @Option(names = "--tenant", paramLabel = "TENANT", description = "The tasks' tenant. Default: none.")
    String tenant;

    @Option(names = "--zone", paramLabel = "ZONE", description = "The time zone of the cron expression. Default: UTC.")
    String zone = "UTC";

    @Option(names = "--catch-up", paramLabel = "N",
        description = "Enqueue at most the N latest missed fires late (no worker up, queue paused). Default: 0 (skip them).")
    int catchUp;

    @Option(names = "--allow-overlap",
        description = "Fire even while the previous task is unfinished. Default: skip that fire.")
    boolean allowOverlap;

    @Option(names = "--jitter", paramLabel = "DURATION", converter = DurationConverter.class,
        description = "Enqueue each fire after a random delay up to this (e.g. 30s). Default: 0.")
    Duration jitter = Duration.ZERO;

    @Option(names = "--priority", paramLabel = "N", description = "The tasks' priority. Default: 0.")
    int priority = TaskOptions.DEFAULT_PRIORITY;

    @Option(names = "--max-attempts", paramLabel = "N", description = "The tasks' attempts. Default: 25.")
    int maxAttempts = TaskOptions.DEFAULT_MAX_ATTEMPTS;

    @Option(names = "--json", description = "Print {\"name\": ..., \"next_fire_at\": ...}.")
    boolean json;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
      Instant next;
      try {
        Schedule s = Schedule.of(name, cron, kind).withQueue(queue).withTenant(tenant).withZone(zone)
            .withCatchUp(catchUp).withJitter(jitter).withPriority(priority).withMaxAttempts(maxAttempts)
            .withPayload(payload);
        s = allowOverlap ? s.withAllowOverlap() : s;
        Schedule declared = s;
        try (OpsDatabase db = OpsDatabase.open(connection, "pgtask schedule")) {
          PgTask pgtask = PgTask.create(db.dataSource());
          next = db.run(dsl -> pgtask.schedule(declared));
        }
      } catch (InvalidScheduleException e) {
        throw new CliException(ExitCodes.USAGE, e.getMessage().replaceFirst("^pgtask: ", ""), e);
      } catch (CliException e) {
        if (e.getCause() instanceof InvalidScheduleException i) {
          throw new CliException(ExitCodes.USAGE, i.getMessage().replaceFirst("^pgtask: ", ""), i);
        }
        throw e;
      }
      PrintWriter out = spec.commandLine().getOut();
      if (json) {
        Formats.printJson(out, Formats.mapper().createObjectNode().put("name", name).put("next_fire_at", String.valueOf(next)));
      } else {
        out.println("schedule " + TerminalText.escape(name) + " declared; next fire at " + next);
        out.flush();
      }
      return ExitCodes.OK;
    }
  }

  /** {@code pgtask unschedule NAME}. */
  @Command(name = "unschedule", mixinStandardHelpOptions = true,
      description = "Remove a schedule (tasks it already enqueued stay).",
      footer = "%nExit codes: 0 removed, 4 no such schedule.")
  static final class Unschedule implements Callable<Integer> {
    @Mixin
    ConnectionOptions connection;

    @Parameters(index = "0", paramLabel = "NAME", description = "The schedule's name.")
    String name;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
      boolean existed;
      try (OpsDatabase db = OpsDatabase.open(connection, "pgtask unschedule")) {
        PgTask pgtask = PgTask.create(db.dataSource());
        existed = db.run(dsl -> pgtask.unschedule(name));
      }
      if (!existed) {
        throw new CliException(ExitCodes.NOT_FOUND, "no schedule named '" + name + "'");
      }
      spec.commandLine().getOut().println("schedule " + TerminalText.escape(name) + " removed");
      spec.commandLine().getOut().flush();
      return ExitCodes.OK;
    }
  }
}
