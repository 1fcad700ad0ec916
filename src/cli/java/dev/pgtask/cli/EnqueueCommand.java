package dev.pgtask.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgtask.NewTask;
import dev.pgtask.PgTask;
import dev.pgtask.TaskOptions;
import java.io.PrintWriter;
import java.time.Instant;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code pgtask enqueue}: enqueues one task through {@link PgTask} (and so {@code pgtask.enqueue})
 * and prints its id alone on stdout. Invalid input is rejected before anything is stored (exit 2).
 */
@Command(name = "enqueue", mixinStandardHelpOptions = true, sortOptions = false,
    description = "Enqueue one task and print its id (with a dedupe key held by an unfinished task: that task's id).")
public final class EnqueueCommand implements Callable<Integer> {

  @Mixin
  ConnectionOptions connection;

  @Option(names = "--kind", required = true, paramLabel = "KIND", description = "The task's kind (its handler).")
  String kind;

  @Option(names = "--payload", paramLabel = "JSON", description = "The payload, a JSON object. Default: {}.")
  String payload;

  @Option(names = "--queue", paramLabel = "QUEUE", description = "The queue. Default: " + TaskOptions.DEFAULT_QUEUE + ".")
  String queue;

  @Option(names = "--tenant", paramLabel = "TENANT",
      description = "The tenant: tasks of one tenant never run at the same time. Default: none.")
  String tenant;

  @Option(names = "--run-at", paramLabel = "ISO-8601", converter = InstantConverter.class,
      description = "Run no earlier than this instant, with its zone: 2030-01-31T09:00:00Z or 2030-01-31T10:00+01:00.")
  Instant runAt;

  @Option(names = "--priority", paramLabel = "N", description = "Lower runs first. Default: " + TaskOptions.DEFAULT_PRIORITY + ".")
  Integer priority;

  @Option(names = "--max-attempts", paramLabel = "N",
      description = "Attempts before the task is discarded. Default: " + TaskOptions.DEFAULT_MAX_ATTEMPTS + ".")
  Integer maxAttempts;

  @Option(names = "--dedupe-key", paramLabel = "KEY",
      description = "While an unfinished task holds this key, enqueueing again returns that task's id.")
  String dedupeKey;

  @Option(names = "--json", description = "Print {\"id\": N} instead of the bare id.")
  boolean json;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() {
    JsonNode body = parsePayload(payload);
    TaskOptions options = TaskOptions.defaults();
    if (queue != null) {
      options = options.withQueue(queue);
    }
    if (tenant != null) {
      options = options.withTenant(tenant);
    }
    if (runAt != null) {
      options = options.withRunAt(runAt);
    }
    if (priority != null) {
      options = options.withPriority(priority);
    }
    if (maxAttempts != null) {
      options = options.withMaxAttempts(maxAttempts);
    }
    if (dedupeKey != null) {
      options = options.withDedupeKey(dedupeKey);
    }
    NewTask task = NewTask.of(kind, body, options);
    long id;
    try (OpsDatabase db = OpsDatabase.open(connection, "pgtask enqueue")) {
      PgTask pgtask = PgTask.create(db.dataSource());
      id = db.run(dsl -> pgtask.enqueue(task));
    }
    PrintWriter out = spec.commandLine().getOut();
    if (json) {
      Formats.printJson(out, Formats.mapper().createObjectNode().put("id", id));
    } else {
      out.println(id);
      out.flush();
    }
    return ExitCodes.OK;
  }

  /** The payload as a JSON object; a usage error (exit 2) naming where it is wrong otherwise. */
  static JsonNode parsePayload(String payload) {
    ObjectMapper mapper = Formats.mapper();
    if (payload == null) {
      return mapper.createObjectNode();
    }
    JsonNode node;
    try {
      node = mapper.readTree(payload);
    } catch (JsonProcessingException e) {
      var loc = e.getLocation();
      throw new CliException(ExitCodes.USAGE, "--payload is not valid JSON"
          + (loc == null ? "" : " (line " + loc.getLineNr() + ", column " + loc.getColumnNr() + ")")
          + ": give a JSON object, e.g. --payload '{\"invoice\": 42}'");
    }
    if (node == null || node.isMissingNode() || !node.isObject()) {
      String type = node == null || node.isMissingNode() ? "empty" : node.getNodeType().name().toLowerCase(Locale.ROOT);
      throw new CliException(ExitCodes.USAGE, "--payload must be a JSON object, not " + type
          + ", e.g. --payload '{\"invoice\": 42}'");
    }
    return node;
  }
}
