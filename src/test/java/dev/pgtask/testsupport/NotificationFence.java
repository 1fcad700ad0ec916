package dev.pgtask.testsupport;

import dev.pgtask.NewTask;
import dev.pgtask.PgTask;
import dev.pgtask.TaskOptions;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

/**
 * What a test caused on channel "pgtask", without waiting for a quiet time: {@link #collect}
 * commits a "fence", an enqueue into a queue of its own, and returns every notification the
 * LISTEN session received before the fence's (notifications arrive in commit order); those that
 * arrive with the fence's but after it belong to the next collect.
 */
public final class NotificationFence {

  private static final long WAIT_MILLIS = 10_000;
  private static final AtomicInteger FENCES = new AtomicInteger();

  private final Connection listener;
  private final PgTask pgtask;
  // what arrived after a fence in the same read: the next collect's first
  private final List<String> afterFence = new ArrayList<>();

  /** LISTENs on channel pgtask on {@code listener}; fences are enqueued through {@code pgtask}. */
  public NotificationFence(Connection listener, PgTask pgtask) throws SQLException {
    this.listener = listener;
    this.pgtask = pgtask;
    try (Statement st = listener.createStatement()) {
      st.execute("LISTEN pgtask");
    }
  }

  /**
   * Commits a fence enqueue and returns "channel:payload" of every notification received before
   * the fence's, failing if the fence does not arrive within 10 s.
   */
  public List<String> collect() throws SQLException {
    String fence = "fence-" + FENCES.incrementAndGet();
    pgtask.enqueue(NewTask.of("fence", Map.of(), TaskOptions.defaults().withQueue(fence)));
    PGConnection pg = listener.unwrap(PGConnection.class);
    List<String> received = new ArrayList<>(afterFence);
    afterFence.clear();
    long deadline = System.currentTimeMillis() + WAIT_MILLIS;
    while (System.currentTimeMillis() < deadline) {
      PGNotification[] batch = pg.getNotifications((int) Math.max(1, deadline - System.currentTimeMillis()));
      if (batch == null) {
        continue;
      }
      boolean fenced = false;
      for (PGNotification n : batch) {
        if (fenced) {
          afterFence.add(n.getName() + ":" + n.getParameter());
        } else if (n.getName().equals("pgtask") && n.getParameter().equals(fence)) {
          fenced = true;
        } else {
          received.add(n.getName() + ":" + n.getParameter());
        }
      }
      if (fenced) {
        return received;
      }
    }
    throw new AssertionError("the fence notification " + fence + " did not arrive within " + WAIT_MILLIS
        + " ms; received before it: " + received);
  }
}
