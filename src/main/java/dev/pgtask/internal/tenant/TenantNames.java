package dev.pgtask.internal.tenant;

import dev.pgtask.internal.sql.Sql;
import dev.pgtask.internal.sql.TenantQueries;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;

/**
 * Tenant names by registry id, cached: a tenant's id and name never change once registered, so
 * the claim returns only ids and names are read once per tenant per worker.
 */
public final class TenantNames {

  private static final int MAX_CACHED = 100_000;

  private final DataSource dataSource;
  private final Map<Integer, String> names = new ConcurrentHashMap<>();

  public TenantNames(DataSource dataSource) {
    this.dataSource = dataSource;
  }

  /** The name of tenant {@code id}. */
  public String name(int id) {
    String n = names.get(id);
    if (n == null) {
      n = TenantQueries.readName(Sql.using(dataSource), id);
      if (names.size() >= MAX_CACHED) {
        names.clear();
      }
      names.put(id, n);
    }
    return n;
  }
}
