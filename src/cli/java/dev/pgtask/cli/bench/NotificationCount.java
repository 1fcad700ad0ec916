package dev.pgtask.cli.bench;

import dev.pgtask.internal.wakeup.WakePayload;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicLong;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

/**
 * Counts the notifications sent on pgtask's channels while a {@code bench --scale} run lasts: a
 * session of the benchmark's own LISTENs on both and counts what it receives. Every listening
 * session of the database is signalled for each of them (PostgreSQL 15 wakes every listener of the
 * database, whatever its channel), so the server's deliveries are about this count times the
 * listening sessions. This session is one listener more: its wake-ups (about one transaction per
 * notification) are left out of the run's transactions by the caller.
 */
final class NotificationCount implements AutoCloseable {

  private final Connection connection;
  private final Thread reader;
  private final AtomicLong received = new AtomicLong();
  private volatile boolean running = true;

  NotificationCount(Callable<Connection> connect) throws Exception {
    this.connection = connect.call();
    try (Statement st = connection.createStatement()) {
      st.execute("SET application_name = '" + ServerLoad.OWN_NAME + "'");
      st.execute("LISTEN " + WakePayload.CHANNEL);
      st.execute("LISTEN " + WakePayload.CONTROL_CHANNEL);
    }
    PGConnection pg = connection.unwrap(PGConnection.class);
    reader = new Thread(() -> {
      while (running) {
        try {
          PGNotification[] notes = pg.getNotifications(100);
          if (notes != null) {
            received.addAndGet(notes.length);
          }
        } catch (SQLException e) {
          return; // closed
        }
      }
    }, "pgtask-bench-scale-notifications");
    reader.setDaemon(true);
    reader.start();
  }

  /** Notifications received so far. */
  long received() {
    return received.get();
  }

  @Override
  public void close() throws SQLException, InterruptedException {
    running = false;
    reader.join(5_000);
    connection.close();
  }
}
