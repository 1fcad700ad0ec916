package dev.pgtask.internal.wakeup;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.pgtask.PgTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.TestDatabase;
import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.logging.Logger;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGPoolingDataSource;

/**
 * The LISTEN connection never comes out of a pool (docs/configuration.md, {@code listenConnection}):
 * a pooled one would go back to its pool still listening. pgjdbc's {@code PGPoolingDataSource} is a
 * pool although it is a pgjdbc data source; a data source pgtask cannot prove unpooled is refused.
 */
class PoolingDataSourceListenTest {

  private static final int POOL_SIZE = 4;

  private static TestDatabase db;

  @BeforeAll
  static void database() {
    db = TestDatabase.create("pooling_listen");
  }

  @AfterAll
  static void drop() {
    db.close();
  }

  @Test
  @SuppressWarnings("deprecation")
  void aWorkerOnAPgPoolingDataSourceWorksAndReturnsNoListeningConnectionToThePool() throws Exception {
    PGPoolingDataSource pool = new PGPoolingDataSource();
    pool.setDataSourceName("pgtask-" + db.name()); // pgjdbc's registry key, needed by close()
    pool.setUrl(db.url());
    pool.setUser(db.user());
    if (db.password() != null) {
      pool.setPassword(db.password());
    }
    pool.setMaxConnections(POOL_SIZE);
    try {
      List<String> ran = new java.util.concurrent.CopyOnWriteArrayList<>();
      PgTaskWorker worker = PgTaskWorker.builder(pool)
          .concurrency(2)
          .handler("pooling.probe", JsonNode.class, (ctx, p) -> ran.add(p.get("n").asText()))
          .build()
          .start();
      Db sql = new Db(db);
      try {
        await("the worker's LISTEN connection").atMost(Duration.ofSeconds(10))
            .until(() -> sql.count("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                + " AND application_name LIKE 'pgtask listen %'") == 1);
        PgTask.create(pool).enqueue(dev.pgtask.NewTask.of("pooling.probe", Map.of("n", "one")));
        await("the task ran").atMost(Duration.ofSeconds(10)).until(() -> ran.contains("one"));
      } finally {
        worker.close();
      }
      // every connection the pool holds, borrowed at once: none listens, none is named as the listener
      List<Connection> borrowed = new ArrayList<>();
      try {
        for (int i = 0; i < POOL_SIZE; i++) {
          borrowed.add(pool.getConnection());
        }
        for (Connection c : borrowed) {
          assertThat(strings(c, "SELECT pg_listening_channels()")).as("channels a pooled connection listens on")
              .isEmpty();
          assertThat(strings(c, "SELECT current_setting('application_name')")).as("application_name")
              .noneMatch(n -> n.startsWith("pgtask listen"));
        }
      } finally {
        for (Connection c : borrowed) {
          c.close();
        }
      }
    } finally {
      pool.close();
    }
  }

  @Test
  void aDataSourceThatCannotBeProvenUnpooledIsRefusedAtBuildAskingForListenConnection() {
    DataSource unknown = new OpaquePool(db.dataSource());
    assertThatThrownBy(() -> PgTaskWorker.builder(unknown)
        .handler("pooling.probe", JsonNode.class, (ctx, p) -> { })
        .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(OpaquePool.class.getName())
        .hasMessageContaining("listenConnection(");
  }

  private static List<String> strings(Connection c, String query) throws SQLException {
    List<String> out = new ArrayList<>();
    try (var st = c.createStatement(); ResultSet rs = st.executeQuery(query)) {
      while (rs.next()) {
        out.add(rs.getString(1));
      }
    }
    return out;
  }

  /** A pool pgtask knows nothing about (here it hands out the test database's pooled connections). */
  private static final class OpaquePool implements DataSource {
    private final DataSource inner;

    OpaquePool(DataSource inner) {
      this.inner = inner;
    }

    @Override
    public Connection getConnection() throws SQLException {
      return inner.getConnection();
    }

    @Override
    public Connection getConnection(String user, String password) throws SQLException {
      return inner.getConnection(user, password);
    }

    @Override
    public PrintWriter getLogWriter() {
      return null;
    }

    @Override
    public void setLogWriter(PrintWriter out) {}

    @Override
    public void setLoginTimeout(int seconds) {}

    @Override
    public int getLoginTimeout() {
      return 0;
    }

    @Override
    public Logger getParentLogger() {
      return Logger.getGlobal();
    }

    @Override
    public <T> T unwrap(Class<T> iface) throws SQLException {
      throw new SQLException("not a wrapper");
    }

    @Override
    public boolean isWrapperFor(Class<?> iface) {
      return false;
    }
  }
}
