package dev.pgtask.dashboard;

/**
 * Whether a request may perform an action: the embedding application's decision, e.g. from the
 * request's principal and its roles. The dashboard asks before it shows an action's form and again
 * when the action's POST arrives; a denied POST is answered 403 and changes nothing. Reads are not
 * asked about: whoever reaches the dashboard may read it (guard the path itself, e.g. with Spring
 * Security, or keep it on 127.0.0.1).
 *
 * <pre>{@code
 * DashboardAccess access = (request, action) ->
 *     request.principal() != null && admins.contains(request.principal().getName());
 * }</pre>
 */
@FunctionalInterface
public interface DashboardAccess {

  /** No action for anyone: the default. */
  DashboardAccess READ_ONLY = (request, action) -> false;

  /** Every action for everyone who reaches the dashboard ({@code pgtask dashboard --read-write}). */
  DashboardAccess READ_WRITE = (request, action) -> true;

  /** Whether {@code request} may perform {@code action}. */
  boolean allows(DashboardRequest request, DashboardAction action);
}
