/**
 * Helpers for the tests of applications that use pgtask, against a real database (a local server
 * or Testcontainers: they need only a {@link javax.sql.DataSource}).
 *
 * <ul>
 *   <li>{@link dev.pgtask.testing.EnqueuedTasks}: what was enqueued, by kind, queue, tenant, run
 *       time, state and typed payload, read inside the test's own open transaction (given its
 *       {@link java.sql.Connection}) or after it committed.</li>
 *   <li>{@link dev.pgtask.testing.PgTaskTester}: runs the tasks that are due now, or one task by
 *       id, synchronously in the calling thread with a worker's real handlers and the worker's own
 *       execution path (task transaction, tenant lock, savepoint, outcome, retry policy), and
 *       reports how each attempt ended.</li>
 * </ul>
 *
 * <p>Framework-neutral: the assertion methods throw {@link java.lang.AssertionError}, which JUnit,
 * TestNG and AssertJ report as a failure; no test library is needed on the classpath.
 */
package dev.pgtask.testing;
