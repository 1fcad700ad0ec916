package dev.pgtask.internal.sql;

import static dev.pgtask.internal.sql.gen.Tables.TENANT;

import org.jooq.DSLContext;

/** Reads of the tenant registry. */
public final class TenantQueries {

  private TenantQueries() {}

  /** The name of a registered tenant. Locks: none. */
  public static String readName(DSLContext dsl, int id) {
    return dsl.select(TENANT.NAME).from(TENANT).where(TENANT.ID.eq(id)).fetchOne(TENANT.NAME);
  }
}
