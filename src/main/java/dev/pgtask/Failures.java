package dev.pgtask;

import dev.pgtask.internal.sql.Sql;
import java.util.Set;

/**
 * The exceptions {@link PgTask}'s operations throw for a failed statement: a database without (all
 * of) the pgtask schema says so and how to create it; everything else as {@link Sql#translate}.
 * Looked at only once a statement has failed: an enqueue that succeeds costs no extra round trip.
 */
final class Failures {

  /** SQLSTATEs that mean the pgtask schema, or one of its functions or tables, is not there. */
  private static final Set<String> NOT_MIGRATED = Set.of(
      "3F000", // invalid_schema_name: schema "pgtask" does not exist
      "42883", // undefined_function: pgtask.enqueue(...) does not exist (an older schema)
      "42P01"); // undefined_table

  private Failures() {}

  /** Runs {@code statement}, the statement of {@code action}; a failure is thrown as {@link #of}. */
  static <T> T call(String action, java.util.function.Supplier<T> statement) {
    try {
      return statement.get();
    } catch (RuntimeException e) {
      throw of(action, e);
    }
  }

  /** The exception to throw for {@code e}, raised by the statement of {@code action} ("enqueue", "cancel", ...). */
  static RuntimeException of(String action, RuntimeException e) {
    if (e instanceof PgTaskException p) {
      return p;
    }
    String state = Sql.sqlState(e);
    if (state != null && NOT_MIGRATED.contains(state)) {
      return new PgTaskException("pgtask: " + action + " failed: the pgtask schema is missing or not fully"
          + " migrated in this database (" + serverMessage(e) + ", SQLSTATE " + state + "); run the migrations"
          + " first: Migrations.apply(dataSource) or bin/pgtask migrate", e);
    }
    return Sql.translate(action, e);
  }

  /** The server's one-line message (it names the missing object), without the driver's position line. */
  private static String serverMessage(Throwable e) {
    for (Throwable c = e; c != null; c = c.getCause()) {
      if (c instanceof org.postgresql.util.PSQLException p && p.getServerErrorMessage() != null
          && p.getServerErrorMessage().getMessage() != null) {
        return p.getServerErrorMessage().getMessage();
      }
    }
    return Sql.rootMessage(e).lines().findFirst().orElse("");
  }
}
