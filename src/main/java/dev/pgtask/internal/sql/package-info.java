/**
 * The only place with SQL: jOOQ-typed queries over the generated classes in {@code gen}, one class
 * per concern ({@link dev.pgtask.internal.sql.EnqueueQueries}, {@link dev.pgtask.internal.sql.ClaimQueries},
 * ...). Each query's comment states what it locks. The generated classes are committed and checked
 * against the migrations by {@code GeneratedCodeTest}; regenerate with {@code jooq-codegen/regenerate}.
 */
package dev.pgtask.internal.sql;
