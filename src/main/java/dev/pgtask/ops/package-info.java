/**
 * What an operator reads about pgtask, typed: {@link dev.pgtask.ops.PgTaskOperations} reads the
 * public views ({@code pgtask.queue_summary}, {@code pgtask.health}, {@code pgtask.unrunnable},
 * {@code pgtask.running}, {@code pgtask.tenant_locks}, {@code pgtask.workers}, ...) into one
 * immutable record per view, whose components are the view's columns in its order, and explains one
 * task. The command line, the Spring Boot health indicator and applications read through it: one
 * path, so they cannot disagree. Each read is a short read-only transaction with server-side bounds,
 * in plain JDBC (no jOOQ, no pool of its own), and takes no lock.
 */
package dev.pgtask.ops;
