package dev.pgtask.testsupport;

import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.PgTask;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A test class's migrated throwaway database with a pool, a {@link PgTask} client on that pool and
 * SQL helpers: created before the class's first test, the pool closed and the database dropped
 * after its last.
 *
 * <pre>
 * &#64;RegisterExtension
 * static final QueueDatabase queue = new QueueDatabase("ops", 8);
 * </pre>
 */
public final class QueueDatabase implements BeforeAllCallback, AfterAllCallback {

  private final String label;
  private final int poolSize;
  private final String[] setupSql;
  private TestDatabase database;
  private HikariDataSource pool;
  private PgTask pgtask;
  private Db sql;

  /** {@code setupSql}: statements run once the database is migrated, e.g. the test's own tables. */
  public QueueDatabase(String label, int poolSize, String... setupSql) {
    this.label = label;
    this.poolSize = poolSize;
    this.setupSql = setupSql;
  }

  @Override
  public void beforeAll(ExtensionContext context) throws Exception {
    database = TestDatabase.create(label);
    pool = database.pool(poolSize);
    pgtask = PgTask.create(pool);
    sql = new Db(database);
    for (String statement : setupSql) {
      sql.exec(statement);
    }
  }

  @Override
  public void afterAll(ExtensionContext context) {
    if (pool != null) {
      pool.close();
    }
    if (database != null) {
      database.close();
    }
  }

  /** The database (its URL, direct connections, more pools). */
  public TestDatabase database() {
    return database;
  }

  /** The class's pool, of the size given. */
  public HikariDataSource pool() {
    return pool;
  }

  /** A client on {@link #pool()}. */
  public PgTask pgtask() {
    return pgtask;
  }

  /** SQL helpers on the database. */
  public Db sql() {
    return sql;
  }
}
