package dev.pgtask.internal.notifier;

import dev.pgtask.internal.sql.Sql;
import dev.pgtask.internal.sql.TxBounds;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.jooq.DSLContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The rounds of a listener's session: the {@link SessionWork}s that are due (or may run a little
 * early) run together, in one transaction bounded by {@link TxBounds}, on the listener's thread;
 * what each asks to do once the round has committed runs after the commit.
 */
final class SessionRounds {

  private static final Logger log = LoggerFactory.getLogger(SessionRounds.class);

  private final TxBounds bounds;
  // added before the listener starts; read by its thread
  private final List<SessionWork> work = new CopyOnWriteArrayList<>();

  SessionRounds(TxBounds bounds) {
    this.bounds = bounds;
  }

  void add(SessionWork w) {
    work.add(w);
  }

  /** The earlier of {@code wakeAt} and the next work's due time (System.nanoTime()). */
  long nextDue(long wakeAt) {
    for (SessionWork w : work) {
      if (w.dueAt() - wakeAt < 0) {
        wakeAt = w.dueAt();
      }
    }
    return wakeAt;
  }

  /**
   * Runs the works that are due (or may run early) at {@code now} in one transaction; returns
   * whether a statement was sent. A failing statement rolls the round back and is logged; a
   * connection that cannot roll back is lost (the caller reconnects).
   */
  boolean run(Connection c, DSLContext dsl, long now) throws SQLException {
    boolean due = false;
    for (SessionWork w : work) {
      if (w.dueAt() - now <= 0) {
        due = true;
        break;
      }
    }
    if (!due) {
      return false;
    }
    List<Runnable> after = new ArrayList<>();
    try {
      bounds.begin(c); // BEGIN and the bounds, one round trip: a frozen round ends on the server
      for (SessionWork w : work) {
        if (w.runsInRoundAt(now)) {
          Runnable a = w.run(dsl, now);
          if (a != null) {
            after.add(a);
          }
        }
      }
      c.commit();
    } catch (RuntimeException e) {
      c.rollback(); // a dead connection throws here: the listener reconnects
      after.clear();
      log.warn("pgtask listener: an idle-time statement on its session failed ({}); trying again at its next"
          + " round", Sql.rootMessage(e));
    } finally {
      c.setAutoCommit(true);
    }
    for (Runnable a : after) {
      try {
        a.run();
      } catch (RuntimeException e) {
        log.warn("pgtask listener: handling an idle-time statement's result failed: {}", e.getMessage());
      }
    }
    return true;
  }
}
