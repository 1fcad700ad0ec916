/**
 * The operator dashboard: server-rendered HTML pages over {@link dev.pgtask.ops.PgTaskOperations}
 * (every read a read-only transaction with a statement timeout, every list a keyset page or a
 * bounded aggregate) and actions over {@link dev.pgtask.PgTask}'s task, queue, schedule and bulk
 * operations.
 *
 * <p>One core, {@link dev.pgtask.dashboard.Dashboard#handle}, maps a request (method, path, query,
 * form, cookies, principal) to a response; {@link dev.pgtask.dashboard.Dashboard.Builder#start()}
 * serves it with the JDK's {@code com.sun.net.httpserver} (the command line's
 * {@code pgtask dashboard}), and the Spring Boot integration mounts the same core under a path of the
 * application. Nothing here needs a dependency beyond the library's own.
 *
 * <p>The security model (docs/dashboard.md): read-only unless a {@link
 * dev.pgtask.dashboard.DashboardAccess} allows an action; every action is a POST carrying the
 * session's CSRF token (a {@code SameSite=Strict}, {@code HttpOnly} cookie and a hidden form field
 * that must match); every value shown is HTML-escaped by {@code Html}, the one escaping helper; no
 * script is served at all, and the content security policy forbids any.
 */
package dev.pgtask.dashboard;
