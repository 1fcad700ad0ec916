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
 * the kind string stable: it is how workers find the handler, also across deployments.
 */
public interface TaskArgs {

  /** The stable kind string of this task type, e.g. {@code "invoice.send"}. */
  String kind();
}
