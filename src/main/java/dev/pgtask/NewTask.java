package dev.pgtask;

import java.util.Objects;

/**
 * A task to enqueue: its kind, its payload (a {@link TaskArgs} record, a {@code Map}, a Jackson
 * {@code JsonNode} or a JSON object string) and its {@link TaskOptions}.
 *
 * @param kind the task kind, 1 to 255 characters
 * @param payload serialized to a JSON object with Jackson; {@code null} means {@code {}}
 * @param options queue, tenant, timing, priority, attempts, dedupe key
 */
public record NewTask(String kind, Object payload, TaskOptions options) {

  public NewTask {
    Objects.requireNonNull(options, "options");
  }

  /** A task of a typed payload, with default options. */
  public static NewTask of(TaskArgs args) {
    Objects.requireNonNull(args, "args");
    return new NewTask(args.kind(), args, TaskOptions.defaults());
  }

  /** A task of a typed payload. */
  public static NewTask of(TaskArgs args, TaskOptions options) {
    Objects.requireNonNull(args, "args");
    return new NewTask(args.kind(), args, options);
  }

  /** A task of the given kind and payload, with default options. */
  public static NewTask of(String kind, Object payload) {
    return new NewTask(kind, payload, TaskOptions.defaults());
  }

  /** A task of the given kind and payload. */
  public static NewTask of(String kind, Object payload, TaskOptions options) {
    return new NewTask(kind, payload, options);
  }

  /** This task with other options. */
  public NewTask withOptions(TaskOptions options) {
    return new NewTask(kind, payload, options);
  }
}
