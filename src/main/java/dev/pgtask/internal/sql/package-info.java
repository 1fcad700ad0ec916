/**
 * The only place with SQL: jOOQ-typed queries over the generated classes in {@code gen}, one class
 * per concern ({@link dev.pgtask.internal.sql.EnqueueQueries}, {@link dev.pgtask.internal.sql.ClaimQueries},
 * ...). Each query's comment states what it locks. Results are read by name (a column label, or a
 * jOOQ field), never by position.
 *
 * <p>A claimed task's path: {@code ClaimQueries} (the claim; its statements in
 * {@code ClaimStatements}, its rows read by {@code ClaimRows}), {@code ExecuteQueries} (the fenced
 * re-lock that starts an execution), {@code CompletionQueries} (completions, with the commit or in
 * batches), {@code OutcomeQueries} (failures, put-backs, snoozes, cancellations, orphans),
 * {@code LeaseQueries} (lease renewals) and {@code HeldQueries} (the durable checks of held tasks).
 * They share only {@link dev.pgtask.internal.sql.Fence} (the fencing token and how a statement
 * checks it) and {@link dev.pgtask.internal.sql.TaskSql} (the savepoint, the claim's plan
 * settings, the hand-over sequences, the clock and the cancel-request condition). The operator
 * reads of the public views are {@code OperatorViews}' (plain JDBC, behind
 * {@code dev.pgtask.ops.PgTaskOperations}). The generated classes are committed and checked
 * against the migrations by {@code GeneratedCodeTest}; regenerate with {@code jooq-codegen/regenerate}.
 */
package dev.pgtask.internal.sql;
