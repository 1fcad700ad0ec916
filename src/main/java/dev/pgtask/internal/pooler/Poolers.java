package dev.pgtask.internal.pooler;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.postgresql.PGConnection;

/**
 * Recognizes a transaction pooler (PgBouncer with {@code pool_mode = transaction}, or any pooler
 * that hands a server session to another client between transactions) in front of PostgreSQL, and
 * the driver setting that breaks behind one.
 *
 * <p>The probe: connection A reads its backend's pid ({@code pg_backend_pid()}) in autocommit; then
 * connection B, with A still open, opens a transaction and reads its own. A direct connection, or a
 * session pooler's, keeps its backend for as long as it is open, so B can never be served by A's
 * backend, and A's next statement runs on the same backend again. Behind a transaction pooler A's
 * backend went back to the pool after its statement: B is served by it (PgBouncer reuses the most
 * recently released server first), or, when B was given another one, A's next statement may land
 * elsewhere. Either observation proves sharing; it costs three one-row statements on two
 * connections. B's statement waits at most {@value #PROBE_TIMEOUT_MILLIS} ms (a full session pool
 * makes a second client wait for a server): then nothing is concluded.
 *
 * <p>Behind a transaction pooler, pgjdbc's named server-side statements ({@code S_1}, {@code S_2}
 * ..., created after a statement ran {@code prepareThreshold} times, 5 by default) are created on
 * one server session and looked up on another: {@code prepared statement "S_1" already exists} or
 * {@code ... does not exist}, and they outlive the client on the server session. {@code
 * prepareThreshold=0} makes every statement unnamed; {@link UnnamedStatements} is where pgtask's
 * own connections get it.
 */
public final class Poolers {

  static final int PROBE_TIMEOUT_MILLIS = 5_000;

  /** What to change, for every message that finds named statements behind a transaction pooler. */
  public static final String PREPARE_FIX = "add prepareThreshold=0 to the JDBC URL (or the pool's data source"
      + " properties, HikariCP: addDataSourceProperty(\"prepareThreshold\", \"0\")) so that pgjdbc names no"
      + " server-side statements, or use session pooling; see docs/deployment.md";

  private Poolers() {}

  /** What the probe saw. */
  public record Probe(boolean sharesSessions, int prepareThreshold) {
    /**
     * Sessions are shared between clients and pgjdbc names server-side statements (any threshold
     * but 0: a negative one names every statement): this breaks.
     */
    public boolean namedStatementsCollide() {
      return sharesSessions && prepareThreshold != 0;
    }
  }

  /**
   * Probes with two connections from {@code open}; both are closed (returned) before it returns.
   * The probe names no statement on either ({@link UnnamedStatements#during}): its {@code ROLLBACK}
   * would otherwise stay prepared as {@code S_1} on a transaction pooler's server session.
   */
  public static Probe probe(Callable<Connection> open) throws Exception {
    try (Connection a = open.call()) {
      int threshold = a.isWrapperFor(PGConnection.class) ? a.unwrap(PGConnection.class).getPrepareThreshold() : 0;
      return UnnamedStatements.during(a, () -> {
        a.setAutoCommit(true);
        int first = pid(a);
        Connection b;
        try {
          b = open.call();
        } catch (SQLException e) {
          throw e;
        } catch (Exception e) {
          throw new SQLException(e);
        }
        try (b) {
          return UnnamedStatements.during(b, () -> new Probe(sharedWith(a, first, b), threshold));
        }
      });
    }
  }

  /** Whether {@code b}, in a transaction, meets {@code a}'s backend, or {@code a} moved: see the class comment. */
  private static boolean sharedWith(Connection a, int first, Connection b) throws SQLException {
    ExecutorService timeouts = Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "pgtask-pooler-probe");
      t.setDaemon(true);
      return t;
    });
    try {
      b.setNetworkTimeout(timeouts, PROBE_TIMEOUT_MILLIS);
      b.setAutoCommit(false);
      int other;
      try {
        other = pid(b);
      } catch (SQLException e) {
        return false; // no server for B in time: a full session pool, not sharing
      }
      boolean shared = other == first || pid(a) != first;
      try {
        b.rollback();
        b.setAutoCommit(true);
        b.setNetworkTimeout(null, 0);
      } catch (SQLException e) {
        // B is discarded by its pool when it is broken
      }
      return shared;
    } finally {
      timeouts.shutdownNow();
    }
  }

  /** Probes with two connections of {@code dataSource}. */
  public static Probe probe(javax.sql.DataSource dataSource) throws Exception {
    return probe(dataSource::getConnection);
  }

  private static int pid(Connection c) throws SQLException {
    try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT pg_backend_pid() AS pid")) {
      rs.next();
      return rs.getInt("pid");
    }
  }

  /**
   * Whether {@code t} (or a cause) is pgjdbc's named statement meeting another session's, or
   * missing on the session it landed on: the mark of named statements behind a transaction pooler.
   */
  public static boolean isNamedStatementClash(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
      if (c instanceof SQLException e && ("42P05".equals(e.getSQLState()) || "26000".equals(e.getSQLState()))
          && e.getMessage() != null && e.getMessage().contains("prepared statement \"S_")) {
        return true;
      }
    }
    return false;
  }

  /**
   * Stops a worker whose pool goes through a transaction pooler with named statements, before it
   * claims anything, with what to change. A probe that cannot run (the database is unreachable)
   * proves nothing: the worker's start reports that itself.
   */
  public static void checkWorkerPool(javax.sql.DataSource dataSource, String workerId) {
    Probe p;
    try {
      p = probe(dataSource);
    } catch (Exception e) {
      return;
    }
    if (p.namedStatementsCollide()) {
      throw new dev.pgtask.PgTaskException("pgtask: cannot start worker " + workerId + ": its connection pool"
          + " goes through a transaction pooler (two of its connections were served by one server session,"
          + " e.g. PgBouncer with pool_mode = transaction), and pgjdbc names server-side statements there"
          + " (prepareThreshold=" + p.prepareThreshold() + "), which collide between clients"
          + " (prepared statement \"S_1\" already exists): " + PREPARE_FIX);
    }
  }

  /** How long each of the capacity check's connections may wait for a server session. */
  public static final int CAPACITY_WAIT_MILLIS = 5_000;

  /**
   * Whether {@code dataSource} can give {@code needed} connections at once, each answering a
   * statement within {@value #CAPACITY_WAIT_MILLIS} ms: the worker's executors and its claims need
   * that many. It does not when PostgreSQL's {@code max_connections} is reached, or when a session
   * pooler (PgBouncer {@code pool_mode = session}) has fewer server sessions left than the pool
   * has connections: there a client connection without a session waits for one at its first
   * statement, and a task given that connection waits with it. Returns how many answered (at most
   * {@code needed}); the connections go back to the pool (one that timed out is broken and is
   * discarded by it).
   */
  public static int connectionsAvailable(javax.sql.DataSource dataSource, int needed) {
    java.util.List<Connection> held = new java.util.ArrayList<>();
    ExecutorService timeouts = Executors.newCachedThreadPool(r -> {
      Thread t = new Thread(r, "pgtask-capacity-check");
      t.setDaemon(true);
      return t;
    });
    int answered = 0;
    try {
      while (answered < needed) {
        Connection c;
        // the pool's own wait can be long (HikariCP: 30 s) while the others are held: bound it
        java.util.concurrent.CompletableFuture<Connection> borrow = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
          try {
            return dataSource.getConnection();
          } catch (SQLException e) {
            throw new java.util.concurrent.CompletionException(e);
          }
        }, timeouts);
        try {
          c = borrow.get(CAPACITY_WAIT_MILLIS, java.util.concurrent.TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
          borrow.thenAccept(late -> {
            try {
              late.close();
            } catch (SQLException ignored) {
              // back to its pool or discarded
            }
          });
          break;
        } catch (java.util.concurrent.ExecutionException | RuntimeException e) {
          break;
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          break;
        }
        held.add(c);
        try {
          c.setNetworkTimeout(timeouts, CAPACITY_WAIT_MILLIS);
          try (Statement s = c.createStatement()) {
            s.execute("SELECT 1");
          }
          c.setNetworkTimeout(null, 0);
          answered++;
        } catch (SQLException | RuntimeException e) {
          break;
        }
      }
    } finally {
      for (Connection c : held) {
        try {
          c.close();
        } catch (SQLException e) {
          // discarded by its pool
        }
      }
      timeouts.shutdown(); // a late borrow still completes and is closed
    }
    return answered;
  }

  /**
   * Checks {@link #connectionsAvailable} on a thread of its own, and warns once, with the numbers
   * and what to change, when the pool cannot give what the worker needs. The worker starts it before
   * its listener and waits for it (bounded) before its first claim: the connections the check holds
   * for a moment must not be ones that claimed tasks wait for (a check running beside the first
   * claims kept a worker of concurrency 30 from ever running its 30 tasks at once).
   */
  public static Thread warnWhenShort(javax.sql.DataSource dataSource, int concurrency, String workerId) {
    int needed = concurrency + 1;
    Thread t = new Thread(() -> {
      int available = connectionsAvailable(dataSource, needed);
      if (available < needed) {
        org.slf4j.LoggerFactory.getLogger(Poolers.class).warn("pgtask worker {}: its connection pool gave only {} of"
            + " the {} connections it needs at once (concurrency {} + 1 for claims and maintenance) within {} ms each:"
            + " the pool is shared and busy, PostgreSQL's max_connections is reached, or a session pooler (PgBouncer pool_mode = session) has fewer"
            + " server sessions than the pool has connections (each client connection holds one). Tasks then wait"
            + " for a connection while claimed. Raise the server's or the pooler's limit (PgBouncer default_pool_size,"
            + " max_db_connections), lower concurrency, or use transaction pooling with a direct listen URL; see"
            + " docs/deployment.md", workerId, available, needed, concurrency, CAPACITY_WAIT_MILLIS);
      }
    }, "pgtask-capacity-" + workerId);
    t.setDaemon(true);
    t.start();
    return t;
  }
}
