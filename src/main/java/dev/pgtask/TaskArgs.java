package dev.pgtask;

/**
 * A typed task payload: usually a record, serialized to a JSON object with Jackson.
 *
 * <pre>{@code
 * record SendInvoice(long invoiceId) implements TaskArgs {
 *   public String kind() { return "invoice.send"; }
 * }
 * }</pre>
 *
 * <p>{@link #kind()} is a method, not a record component, so it is not part of the payload. Keep
 * the kind string stable: it is how workers find the handler, also across deployments. Instead of
 * overriding {@link #kind()}, the type may declare its kind with {@link TaskKind}; registrations that
 * know only the class then find it too ({@link #kindOf}).
 */
public interface TaskArgs {

  /**
   * The stable kind string of this task type, e.g. {@code "invoice.send"}. By default the value of
   * the type's {@link TaskKind} annotation.
   *
   * @throws IllegalStateException when neither overridden nor annotated
   */
  default String kind() {
    return kindOf(getClass());
  }

  /**
   * The kind a {@link TaskArgs} type declares with {@link TaskKind}.
   *
   * @throws IllegalStateException when {@code type} carries no {@link TaskKind}, naming the type
   */
  static String kindOf(Class<?> type) {
    TaskKind k = type.getAnnotation(TaskKind.class);
    if (k == null) {
      throw new IllegalStateException("pgtask: " + type.getName() + " declares no kind: annotate it with"
          + " @TaskKind(\"...\") (or override kind() and register its handler with an explicit kind)");
    }
    return k.value();
  }
}
