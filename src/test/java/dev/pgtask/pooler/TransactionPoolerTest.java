package dev.pgtask.pooler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.NewTask;
import dev.pgtask.PgTask;
import dev.pgtask.PgTaskException;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskOptions;
import dev.pgtask.internal.pooler.Poolers;
import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.PgBouncer;
import dev.pgtask.testsupport.PgBouncer.Mode;
import dev.pgtask.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * pgtask behind a real PgBouncer in transaction mode (and session mode, for the probe): the pooler
 * is recognized, named statements stop a worker with what to change, and after pgtask's
 * transactions no pgtask state is left on PgBouncer's server sessions.
 */
class TransactionPoolerTest {

  private static TestDatabase db;

  @BeforeAll
  static void database() {
    PgBouncer.requireBinary();
    db = TestDatabase.create("pooler_tx");
  }

  @AfterAll
  static void drop() {
    if (db != null) {
      db.close();
    }
  }

  private static HikariDataSource pool(String url, int size) {
    HikariConfig c = new HikariConfig();
    c.setJdbcUrl(url);
    c.setMaximumPoolSize(size);
    c.setMinimumIdle(0);
    return new HikariDataSource(c);
  }

  @Test
  void theProbeTellsATransactionPoolerFromASessionPoolerAndADirectConnection() throws Exception {
    assertThat(Poolers.probe(() -> DriverManager.getConnection(db.fullUrl())).sharesSessions())
        .as("direct to PostgreSQL").isFalse();
    try (PgBouncer tx = PgBouncer.start(db, Mode.TRANSACTION, 3); PgBouncer session = PgBouncer.start(db, Mode.SESSION, 3)) {
      Poolers.Probe behindTx = Poolers.probe(() -> DriverManager.getConnection(tx.fullUrl()));
      assertThat(behindTx.sharesSessions()).as("PgBouncer pool_mode = transaction").isTrue();
      assertThat(behindTx.namedStatementsCollide()).as("with pgjdbc's default prepareThreshold").isTrue();
      assertThat(Poolers.probe(() -> DriverManager.getConnection(tx.fullUrl("prepareThreshold=0"))).namedStatementsCollide())
          .as("with prepareThreshold=0").isFalse();
      assertThat(Poolers.probe(() -> DriverManager.getConnection(session.fullUrl())).sharesSessions())
          .as("PgBouncer pool_mode = session").isFalse();
    }
  }

  @Test
  void aPoolPgtaskBuildsNamesNoStatementBehindATransactionPoolerWithoutAUrlFlag() throws Exception {
    HikariConfig direct = new HikariConfig();
    direct.setJdbcUrl(db.fullUrl());
    assertThat(dev.pgtask.internal.pooler.UnnamedStatements.fit(direct)).as("direct to PostgreSQL").isFalse();
    try (PgBouncer tx = PgBouncer.start(db, Mode.TRANSACTION, 2)) {
      HikariConfig behind = new HikariConfig();
      behind.setJdbcUrl(tx.fullUrl());
      behind.setMaximumPoolSize(2);
      assertThat(dev.pgtask.internal.pooler.UnnamedStatements.fit(behind)).as("behind PgBouncer, transaction mode").isTrue();
      try (HikariDataSource pool = new HikariDataSource(behind); Connection c = pool.getConnection()) {
        assertThat(c.unwrap(org.postgresql.PGConnection.class).getPrepareThreshold()).isZero();
      }
      HikariConfig explicit = new HikariConfig();
      explicit.setJdbcUrl(tx.fullUrl("prepareThreshold=5"));
      assertThat(dev.pgtask.internal.pooler.UnnamedStatements.fit(explicit)).as("a threshold the settings set").isFalse();
    }
  }

  @Test
  void aWorkerWhosePoolNamesStatementsBehindATransactionPoolerStopsAtStartSayingWhatToChange() throws Exception {
    try (PgBouncer b = PgBouncer.start(db, Mode.TRANSACTION, 3); HikariDataSource pool = pool(b.fullUrl(), 4)) {
      PgTaskWorker worker = PgTaskWorker.builder(pool).concurrency(2).listenUrl(db.fullUrl())
          .handler("tp.noop", (ctx, p) -> { }).build();
      assertThatThrownBy(worker::start).isInstanceOf(PgTaskException.class)
          .hasMessageContaining("transaction pooler")
          .hasMessageContaining("prepareThreshold=0");
      worker.close();
    }
  }

  @Test
  void aNamedStatementClashBehindATransactionPoolerIsReportedWithTheFix() throws Exception {
    try (PgBouncer b = PgBouncer.start(db, Mode.TRANSACTION, 1);
        Connection first = b.connect(); Connection second = b.connect()) {
      PgTask pgtask = PgTask.create(db.dataSource());
      // pgjdbc names a statement after its 5th run; one server session serves both clients in turn
      for (int i = 0; i < 6; i++) {
        pgtask.enqueue(first, NewTask.of("tp.clash", Map.of(), TaskOptions.defaults().withQueue("clash")));
      }
      assertThatThrownBy(() -> {
        for (int i = 0; i < 6; i++) {
          pgtask.enqueue(second, NewTask.of("tp.clash", Map.of(), TaskOptions.defaults().withQueue("clash")));
        }
      }).isInstanceOf(PgTaskException.class)
          .hasMessageContaining("prepared statement \"S_")
          .hasMessageContaining("prepareThreshold=0");
    }
  }

  @Test
  void noPgtaskSessionStateIsLeftOnAServerConnectionAfterPgtaskTransactions() throws Exception {
    int serverPool = 2;
    try (PgBouncer b = PgBouncer.start(db, Mode.TRANSACTION, serverPool);
        HikariDataSource pool = pool(b.fullUrl("prepareThreshold=0"), 5)) {
      PgTask pgtask = PgTask.create(pool);
      PgTaskWorker worker = PgTaskWorker.builder(pool).concurrency(3).queues("state").listenUrl(db.fullUrl())
          .pollInterval(Duration.ofMillis(200))
          .handler("tp.tx", JsonNode.class, (ctx, p) -> ctx.dsl().execute("SELECT 1"))
          .handler("tp.tenant", JsonNode.class, (ctx, p) -> ctx.dsl().execute("SELECT 1"))
          .build().start();
      try {
        for (int i = 0; i < 60; i++) {
          pgtask.enqueue(NewTask.of(i % 2 == 0 ? "tp.tx" : "tp.tenant", Map.of("i", i),
              TaskOptions.defaults().withQueue("state").withTenant(i % 2 == 0 ? null : "t" + (i % 4))));
        }
        Db sql = new Db(db);
        await().atMost(Duration.ofSeconds(60)).until(() ->
            sql.count("SELECT count(*) FROM pgtask.task WHERE queue = 'state' AND state = 'completed'") == 60);
        pgtask.cancel(pgtask.enqueue(NewTask.of("tp.tx", Map.of(), TaskOptions.defaults().withQueue("other"))));
      } finally {
        worker.close();
      }
      // every server session of the pool, each held by one client in a transaction at once
      List<Connection> clients = new ArrayList<>();
      List<String> found = new ArrayList<>();
      try {
        for (int i = 0; i < serverPool; i++) {
          Connection c = b.connect("prepareThreshold=0");
          c.setAutoCommit(false);
          clients.add(c);
          try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(
              "SELECT pg_backend_pid(),"
                  + " (SELECT count(*) FROM pg_listening_channels()),"
                  + " (SELECT count(*) FROM pg_prepared_statements),"
                  + " (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()),"
                  + " current_setting('search_path'), current_setting('synchronous_commit'),"
                  + " current_setting('statement_timeout'), current_setting('idle_in_transaction_session_timeout'),"
                  + " coalesce(current_setting('pgtask.claim_head', true), ''), current_setting('plan_cache_mode')")) {
            rs.next();
            found.add("listening " + rs.getLong(2) + ", prepared " + rs.getLong(3) + ", advisory locks " + rs.getLong(4)
                + ", search_path " + rs.getString(5) + ", synchronous_commit " + rs.getString(6)
                + ", statement_timeout " + rs.getString(7) + ", idle_in_transaction_session_timeout " + rs.getString(8)
                + ", pgtask.claim_head '" + rs.getString(9) + "', plan_cache_mode " + rs.getString(10)
                + " (pid " + rs.getInt(1) + ")");
          }
        }
      } finally {
        for (Connection c : clients) {
          c.rollback();
          c.close();
        }
      }
      assertThat(found).as("the server sessions PgBouncer pooled for pgtask").hasSize(serverPool)
          .allSatisfy(s -> assertThat(s).startsWith("listening 0, prepared 0, advisory locks 0, search_path \"$user\", public,"
              + " synchronous_commit on, statement_timeout 0, idle_in_transaction_session_timeout 0, pgtask.claim_head '',"
              + " plan_cache_mode auto"));
    }
  }
}
