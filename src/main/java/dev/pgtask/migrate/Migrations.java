package dev.pgtask.migrate;

import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.output.MigrateResult;

/**
 * Applies pgtask's schema migrations (the {@code db/} folder of the source tree, shipped in the jar).
 *
 * <p>pgtask keeps its own Flyway history table, {@value #HISTORY_TABLE}, inside the
 * {@value #SCHEMA} schema, so it never meets the host application's own Flyway history. Applying is
 * idempotent: migrations already applied are skipped, and concurrent callers are serialized by
 * Flyway's own lock.
 */
public final class Migrations {

  /** The schema that holds every pgtask object. */
  public static final String SCHEMA = "pgtask";

  /** pgtask's Flyway history table, inside {@link #SCHEMA}. */
  public static final String HISTORY_TABLE = "pgtask_schema_history";

  /** Classpath location of the migrations inside the jar. */
  public static final String LOCATION = "classpath:dev/pgtask/db";

  private Migrations() {}

  /**
   * Brings the pgtask schema of the database behind {@code dataSource} up to date.
   *
   * @return the number of migrations applied by this call (0 when already up to date)
   */
  public static int apply(DataSource dataSource) {
    MigrateResult result;
    try {
      result = flyway(dataSource).migrate();
    } catch (RuntimeException e) {
      if (dev.pgtask.internal.pooler.Poolers.isNamedStatementClash(e)) {
        throw new dev.pgtask.PgTaskException("pgtask: applying the migrations failed: pgjdbc's named server-side"
            + " statements collide behind a transaction pooler (" + dev.pgtask.internal.sql.Sql.rootMessage(e) + ")", e);
      }
      throw e;
    }
    return result.migrationsExecuted;
  }

  /** The schema version currently applied, or {@code null} when pgtask was never migrated. */
  public static String currentVersion(DataSource dataSource) {
    var current = flyway(dataSource).info().current();
    return current == null ? null : current.getVersion().getVersion();
  }

  private static Flyway flyway(DataSource dataSource) {
    return Flyway.configure(Migrations.class.getClassLoader())
        .dataSource(dataSource)
        .schemas(SCHEMA)
        .defaultSchema(SCHEMA)
        .createSchemas(true)
        .table(HISTORY_TABLE)
        .locations(LOCATION)
        .placeholderReplacement(false)
        .validateMigrationNaming(true)
        .load();
  }
}
