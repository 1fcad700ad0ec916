package dev.pgtask.internal.sql;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.function.Function;
import javax.sql.DataSource;
import org.jooq.DSLContext;

/**
 * The server-side bounds of a transaction pgtask opens: {@code statement_timeout},
 * {@code lock_timeout} and {@code idle_in_transaction_session_timeout}, set transaction-locally
 * ({@code set_config(..., true)}) before the transaction's first statement of work, whichever
 * connection runs it (a pooled one, the LISTEN session, a connection through a pooler). So a frozen
 * client, pooler or network never holds a lock, a lease or a backend that other workers wait on for
 * longer than the bound: the server ends the session when it idles in its transaction past
 * {@link #idle()}, a statement that waits for a lock gives up after {@link #lock()}, and one that
 * runs gives up after {@link #statement()}.
 *
 * <p>Every transaction pgtask opens starts here: the listener's rounds and the maintenance passes
 * and ticks through {@link #begin(Connection)} or {@link #inTransaction}, the claims and the task
 * transaction's re-lock with {@link #sql()} pipelined before their first statement (no round trip
 * of its own). The worker's short transactions take {@link #ofBeat}; the task transaction keeps its
 * own statement and idle bounds (the task timeout plus a margin) and bounds its re-lock's wait with
 * {@link #relockWait()}.
 */
public record TxBounds(Duration statement, Duration lock, Duration idle) {

  /** The smallest bound of a short transaction. */
  public static final Duration MIN = Duration.ofSeconds(1);
  /** The largest bound of a short transaction. */
  public static final Duration MAX = Duration.ofSeconds(5);

  /** Validates the bounds: each positive. */
  public TxBounds {
    for (Duration d : new Duration[] {statement, lock, idle}) {
      if (d == null || d.isNegative() || d.isZero()) {
        throw new IllegalArgumentException("transaction bounds must be positive: " + statement + ", " + lock + ", " + idle);
      }
    }
  }

  /**
   * The bounds of a worker's short transactions (the listener's rounds, the maintenance ticks and
   * passes, the claims, lease renewals, completions and outcomes), from its beat (the maintenance
   * tick's period: the rescue interval, at most 10 s and a third of the lease): the beat, at least
   * {@link #MIN} and at most {@link #MAX}, for each of the three. A frozen round that renewed the
   * maintenance lease then ends within a beat of its last statement, before the lease it renewed
   * runs out (three beats after the previous renewal), so the four-beat takeover bound holds.
   */
  public static TxBounds ofBeat(Duration beat) {
    Duration b = beat.compareTo(MIN) < 0 ? MIN : beat.compareTo(MAX) > 0 ? MAX : beat;
    return new TxBounds(b, b, b);
  }

  /**
   * How long the task transaction's re-lock waits for its row: twice the short bound. A short
   * transaction of pgtask's that holds the row (a lease renewal, on the LISTEN session or the pool)
   * and whose client froze ends within a statement bound plus an idle bound, so the re-lock outlasts
   * it and the task runs in its attempt instead of failing it.
   */
  public Duration relockWait() {
    Duration s = statement.compareTo(idle) > 0 ? statement : idle;
    return s.plus(lock.compareTo(s) > 0 ? lock : s);
  }

  /**
   * A client-side network timeout for a session whose statements all run under these bounds (the
   * LISTEN session): a healthy server answers within the statement bound; twice that plus 2 s.
   */
  public Duration networkTimeout() {
    return statement.multipliedBy(2).plusSeconds(2);
  }

  /** This with another statement and idle bound (the task transaction's), the lock bound kept. */
  public TxBounds withStatementAndIdle(Duration statementAndIdle) {
    return new TxBounds(statementAndIdle, lock, statementAndIdle);
  }

  /** This with another lock bound. */
  public TxBounds withLock(Duration lockBound) {
    return new TxBounds(statement, lockBound, idle);
  }

  /**
   * The statement that sets the three bounds for the rest of the current transaction (a constant
   * text per bounds: no parameters, so it can be pipelined before another statement).
   */
  public String sql() {
    return "SELECT set_config('statement_timeout', '" + statement.toMillis() + "', true), "
        + "set_config('lock_timeout', '" + lock.toMillis() + "', true), "
        + "set_config('idle_in_transaction_session_timeout', '" + idle.toMillis() + "', true)";
  }

  /**
   * The same as {@link #sql()} as {@code SET LOCAL} statements (three, separated by semicolons):
   * they answer with update counts, not a result set, so they can be pipelined in front of a
   * statement whose result set is read first.
   */
  public String setLocalSql() {
    return "SET LOCAL statement_timeout = " + statement.toMillis() + ";\n"
        + "SET LOCAL lock_timeout = " + lock.toMillis() + ";\n"
        + "SET LOCAL idle_in_transaction_session_timeout = " + idle.toMillis();
  }

  /**
   * The bounds of the task transaction's re-lock, pipelined before it: the lock bound is
   * {@link #relockWait()}, the statement bound outlasts it; the re-lock then sets the task's own
   * statement and idle bounds, and {@link #AFTER_RELOCK} gives the handler the session's default
   * lock_timeout back.
   */
  public TxBounds forRelock() {
    Duration wait = relockWait();
    return new TxBounds(wait.plus(statement), wait, idle);
  }

  /** Pipelined after the re-lock: the handler's statements run with the session's default lock_timeout. */
  public static final String AFTER_RELOCK = "SET LOCAL lock_timeout TO DEFAULT";

  /**
   * The statement that sets the three bounds for the session (a dedicated, unpooled session only:
   * the LISTEN session, whose autocommit statements need them too).
   */
  public String sessionSql() {
    return "SELECT set_config('statement_timeout', '" + statement.toMillis() + "', false), "
        + "set_config('lock_timeout', '" + lock.toMillis() + "', false), "
        + "set_config('idle_in_transaction_session_timeout', '" + idle.toMillis() + "', false)";
  }

  /**
   * Opens a transaction on {@code c} (autocommit off) with the bounds set by its first statement:
   * pgjdbc sends BEGIN with it, one round trip.
   */
  public void begin(Connection c) throws SQLException {
    c.setAutoCommit(false);
    try (Statement st = c.createStatement()) {
      st.execute(sql());
    }
  }

  /** Sets the bounds on the dedicated session {@code c} (see {@link #sessionSql()}). */
  public void applyToSession(Connection c) throws SQLException {
    try (Statement st = c.createStatement()) {
      st.execute(sessionSql());
    }
  }

  /**
   * Runs {@code work} in a bounded transaction on a connection of {@code dataSource} and commits;
   * rolls back and rethrows what it throws.
   */
  public <T> T inTransaction(DataSource dataSource, Function<DSLContext, T> work) {
    try (Connection c = dataSource.getConnection()) {
      begin(c);
      try {
        T result = work.apply(Sql.using(c));
        c.commit();
        return result;
      } catch (RuntimeException e) {
        c.rollback();
        throw e;
      } finally {
        c.setAutoCommit(true);
      }
    } catch (SQLException e) {
      throw new org.jooq.exception.DataAccessException(e.getMessage(), e);
    }
  }
}
