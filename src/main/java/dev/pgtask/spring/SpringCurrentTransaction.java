package dev.pgtask.spring;

import dev.pgtask.CurrentTransaction;
import java.sql.Connection;
import javax.sql.DataSource;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * The Spring-managed transaction of the calling thread on the application's {@code DataSource}, for
 * {@link dev.pgtask.PgTask}'s enqueues given no connection. Found where every Spring transaction
 * manager that works on a JDBC {@code DataSource} puts it: a {@code ConnectionHolder} bound for the
 * data source ({@code DataSourceTransactionManager}, {@code JdbcTransactionManager}, Boot's jOOQ
 * integration, {@code JpaTransactionManager} with Hibernate, and a handler bean's task transaction).
 *
 * <p>No actual transaction (none, or a method with propagation {@code SUPPORTS} or
 * {@code NOT_SUPPORTED}), or one on another data source: {@code null}, and the enqueue commits on
 * its own.
 */
final class SpringCurrentTransaction implements CurrentTransaction {

  private final DataSource dataSource;

  SpringCurrentTransaction(DataSource dataSource) {
    this.dataSource = dataSource;
  }

  @Override
  public Connection connection() {
    if (!TransactionSynchronizationManager.isActualTransactionActive()
        || TransactionSynchronizationManager.getResource(dataSource) == null) {
      return null;
    }
    return DataSourceUtils.getConnection(dataSource);
  }

  @Override
  public void release(Connection connection) {
    DataSourceUtils.releaseConnection(connection, dataSource);
  }
}
