package dev.pgtask.cli;

import dev.pgtask.PgTask;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code pgtask pause|resume QUEUE}: stops and restarts the claiming of one queue's tasks by every
 * worker, through {@link PgTask#pauseQueue} and {@link PgTask#resumeQueue}. Both are idempotent.
 */
abstract class QueueCommands implements Callable<Integer> {

  @Mixin
  ConnectionOptions connection;

  @Parameters(index = "0", paramLabel = "QUEUE", description = "The queue's name.")
  String queue;

  @Option(names = "--json", description = "Print {\"queue\": \"...\", \"result\": \"...\"}.")
  boolean json;

  @Spec
  CommandSpec spec;

  /** Runs the operation; returns its result word and a sentence for humans. */
  abstract String[] apply(PgTask pgtask, String queue);

  @Override
  public Integer call() {
    String[] result;
    try (OpsDatabase db = OpsDatabase.open(connection, "pgtask " + spec.name())) {
      PgTask pgtask = PgTask.create(db.dataSource());
      result = db.run(dsl -> apply(pgtask, queue));
    }
    PrintWriter out = spec.commandLine().getOut();
    if (json) {
      Formats.printJson(out, Formats.mapper().createObjectNode().put("queue", queue).put("result", result[0]));
    } else {
      out.println(TerminalText.escape(result[1]));
      out.flush();
    }
    return ExitCodes.OK;
  }

  /** {@code pgtask pause QUEUE}. */
  @Command(name = "pause", mixinStandardHelpOptions = true,
      description = "Pause a queue: no worker claims its tasks until it is resumed (durable; workers that start later"
          + " respect it). Running tasks finish; enqueueing into it still works.",
      footer = "%nExit codes: 0 paused or already paused, 2 not a valid queue name.")
  static final class Pause extends QueueCommands {
    @Override
    String[] apply(PgTask pgtask, String queue) {
      return pgtask.pauseQueue(queue)
          ? new String[] {"paused", "queue " + queue + " paused: workers claim none of its tasks until it is resumed"}
          : new String[] {"already_paused", "queue " + queue + " was already paused"};
    }
  }

  /** {@code pgtask resume QUEUE}. */
  @Command(name = "resume", mixinStandardHelpOptions = true,
      description = "Resume a paused queue: its workers are woken and claim its tasks at once.",
      footer = "%nExit codes: 0 resumed or not paused, 2 not a valid queue name.")
  static final class Resume extends QueueCommands {
    @Override
    String[] apply(PgTask pgtask, String queue) {
      return pgtask.resumeQueue(queue)
          ? new String[] {"resumed", "queue " + queue + " resumed"}
          : new String[] {"not_paused", "queue " + queue + " was not paused"};
    }
  }
}
