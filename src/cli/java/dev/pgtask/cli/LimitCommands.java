package dev.pgtask.cli;

import dev.pgtask.Limit;
import dev.pgtask.LimitScope;
import dev.pgtask.PgTask;
import dev.pgtask.ops.LimitStatus;
import dev.pgtask.ops.PgTaskOperations;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code pgtask limits} (the limits and what each admits now, {@code pgtask.limits}) and
 * {@code pgtask limit set|clear} ({@link dev.pgtask.Limits#set}, {@link dev.pgtask.Limits#clear}).
 */
final class LimitCommands {

  private LimitCommands() {}

  /** {@code pgtask limits}. */
  @Command(name = "limits", mixinStandardHelpOptions = true,
      description = "Every limit (pgtask.set_limit) with what it admits now: max running, running, slots held"
          + " (pg_locks), waiting, the oldest due waiting task, and stuck tasks (lease run out).")
  public static final class List extends ReadCommand {

    @Option(names = "--json", description = "Print a JSON array of the pgtask.limits rows.")
    boolean json;

    public List() {
      super("pgtask limits");
    }

    @Override
    void print(OpsConnection db, PrintWriter out) {
      java.util.List<LimitStatus> limits = db.read(PgTaskOperations::limits);
      if (json) {
        Formats.printJson(out, g -> Formats.write(g, limits));
        return;
      }
      TextTable t = new TextTable("SCOPE", "KEY", "MAX_RUNNING", "RUNNING", "SLOTS_HELD", "PER_SECOND", "BURST",
          "TOKENS", "WEIGHT", "WAITING", "OLDEST_WAITING_SINCE", "STUCK");
      for (LimitStatus l : limits) {
        t.row(l.scope(), l.key(), l.maxRunning() == 0 ? "" : l.maxRunning(), l.running(), l.slotsHeld(),
            l.perSecond() == null ? "" : l.perSecond().toPlainString(), l.burst() == null ? "" : l.burst(),
            l.tokens() == null ? "" : l.tokens(), l.weight() == null ? "" : l.weight().toPlainString(), l.waiting(),
            Formats.text(l.oldestWaitingSince()), l.stuck());
      }
      out.print(t.isEmpty() ? "no limits (a tenant runs one task at a time; queues and kinds are unlimited)\n"
          : t.render());
    }
  }

  /** {@code pgtask limit set|clear}. */
  @Command(name = "limit", mixinStandardHelpOptions = true,
      description = "Set or clear the concurrency limit of a tenant, queue or kind (see 'pgtask limits').",
      subcommands = {Set.class, Clear.class})
  public static final class Limits implements Runnable {
    @Spec
    CommandSpec spec;

    @Override
    public void run() {
      spec.commandLine().usage(spec.commandLine().getOut());
    }
  }

  /** What {@code set} and {@code clear} share: the connection, the scope and the key. */
  abstract static class Change implements Callable<Integer> {
    @Mixin
    ConnectionOptions connection;

    @Option(names = "--scope", required = true, description = "tenant, queue or kind.")
    LimitScope scope;

    @Option(names = "--key", required = true, description = "The tenant's, queue's or kind's name.")
    String key;

    @Option(names = "--json", description = "Print {\"scope\": ..., \"key\": ..., \"result\": ...}.")
    boolean json;

    @Spec
    CommandSpec spec;

    abstract String[] apply(PgTask pgtask);

    @Override
    public Integer call() {
      String[] result;
      try (OpsDatabase db = OpsDatabase.open(connection, "pgtask limit " + spec.name())) {
        PgTask pgtask = PgTask.create(db.dataSource());
        result = db.run(dsl -> apply(pgtask));
      }
      PrintWriter out = spec.commandLine().getOut();
      if (json) {
        Formats.printJson(out, Formats.mapper().createObjectNode().put("scope", scope.sqlName()).put("key", key)
            .put("result", result[0]));
      } else {
        out.println(TerminalText.escape(result[1]));
        out.flush();
      }
      return ExitCodes.OK;
    }
  }

  /** {@code pgtask limit set --scope S --key K [--max-running N] [--per-second R [--burst B]] [--weight W]}. */
  @Command(name = "set", mixinStandardHelpOptions = true,
      description = "At most N tasks of the tenant, queue or kind run at once across the cluster, and/or at most"
          + " B + R x t start in any t seconds, and/or (a tenant) a weight W in fair share of its queues' starts"
          + " (durable; replaces its limit). Running tasks are never stopped by a lower limit.",
      footer = "%nExit codes: 0 set, 2 invalid scope, key, maximum, rate, burst or weight (nothing stored).")
  static final class Set extends Change {
    @Option(names = "--max-running", description = "1 to 1024.")
    Integer maxRunning;

    @Option(names = "--per-second", description = "Starts a second (database clock; retries count).")
    java.math.BigDecimal perSecond;

    @Option(names = "--burst", description = "Starts a rate admits at once (default 1).")
    Integer burst;

    @Option(names = "--weight", description = "A tenant's share of its queues' starts against other tenants"
        + " (above 0, at most 1000; 1 without).")
    java.math.BigDecimal weight;

    @Override
    String[] apply(PgTask pgtask) {
      boolean created = pgtask.limits().set(scope, key, new Limit(maxRunning, perSecond, burst, weight));
      java.util.List<String> parts = new java.util.ArrayList<>();
      if (maxRunning != null) {
        parts.add("at most " + maxRunning + " running at once");
      }
      if (perSecond != null) {
        parts.add(perSecond.toPlainString() + " starts a second (burst " + (burst == null ? 1 : burst) + ")");
      }
      if (weight != null) {
        parts.add("weight " + weight.toPlainString());
      }
      String what = String.join(", ", parts);
      return new String[] {created ? "created" : "changed",
          scope.sqlName() + " " + key + ": " + what + (created ? "" : " (replaced its previous limit)")};
    }
  }

  /** {@code pgtask limit clear --scope S --key K}. */
  @Command(name = "clear", mixinStandardHelpOptions = true,
      description = "Remove the limit of a tenant (back to one task at a time), queue or kind (unlimited).",
      footer = "%nExit codes: 0 cleared or no limit, 2 invalid scope or key.")
  static final class Clear extends Change {
    @Override
    String[] apply(PgTask pgtask) {
      return pgtask.limits().clear(scope, key)
          ? new String[] {"cleared", scope.sqlName() + " " + key + ": limit removed"}
          : new String[] {"no_limit", scope.sqlName() + " " + key + " had no limit"};
    }
  }
}
