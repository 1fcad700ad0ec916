package dev.pgtask.spring;

import dev.pgtask.migrate.Migrations;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.InitializingBean;

/**
 * Applies pgtask's migrations when the context starts, before the {@code PgTask} client and the
 * worker are created. They live in the schema {@value Migrations#SCHEMA} with their own history table
 * ({@value Migrations#SCHEMA}.{@value Migrations#HISTORY_TABLE}): the application's Flyway (if any),
 * its history table and its locations are left as they are.
 */
public final class PgTaskMigrator implements InitializingBean {

  private static final Logger log = LoggerFactory.getLogger(PgTaskMigrator.class);

  private final DataSource dataSource;
  private final boolean enabled;

  PgTaskMigrator(DataSource dataSource, boolean enabled) {
    this.dataSource = dataSource;
    this.enabled = enabled;
  }

  @Override
  public void afterPropertiesSet() {
    if (!enabled) {
      log.info("pgtask: migrations off (pgtask.migrations.enabled=false): the schema must be migrated already");
      return;
    }
    int applied = Migrations.apply(dataSource);
    log.info("pgtask: schema up to date ({} migration(s) applied, history in {}.{})", applied,
        Migrations.SCHEMA, Migrations.HISTORY_TABLE);
  }
}
