package dev.pgtask.internal.notifier;

import dev.pgtask.internal.Service;
import dev.pgtask.internal.WorkerConfig;
import dev.pgtask.internal.sql.Sql;
import java.sql.Connection;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.jooq.DSLContext;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The worker's LISTEN connection: one dedicated session outside the pool.
 *
 * <p>Protocol: connect, name the session ({@code application_name = "pgtask listen <worker>"}),
 * {@code LISTEN pgtask} and {@code LISTEN pgtask_control}, then run the on-listening callback (the
 * worker reads the cancel requests made while it was not listening) and wake the producer once
 * (anything sent while disconnected is lost, so poll). Wait for notifications in slices of the
 * ping interval; after each quiet slice send {@code SELECT 1}: a network timeout on the connection bounds it, so a
 * half-open socket is detected instead of blocking forever. Any failure closes the connection and
 * reconnects with exponential backoff (100 ms to 5 s, jittered). Notifications on {@code pgtask}
 * carry a queue name: those of this worker's queues wake the producer. Notifications on
 * {@code pgtask_control} carry {@code cancel <task id> <attempt>}: only a hint (any role may
 * NOTIFY on any channel), passed on by task id; the worker verifies it against durable state.
 *
 * <p>{@link #listeningSince()} says since when (System.nanoTime()) the LISTENs have been in place
 * without a break, or 0: a cancellation committed after that instant reaches this worker.
 */
public final class Listener extends Service {

  /** The channel producers notify; payload = queue name. */
  public static final String CHANNEL = "pgtask";
  /** The channel of operator commands to workers; payload = {@code cancel <task id> <attempt>}. */
  public static final String CONTROL_CHANNEL = "pgtask_control";

  private static final Logger log = LoggerFactory.getLogger(Listener.class);

  private final WorkerConfig config;
  private final Runnable onWake;
  private final CancelSink onCancel;
  private final Runnable onListening;
  private final Set<String> queues;
  private final AtomicLong reconnects = new AtomicLong();
  private final java.util.concurrent.ExecutorService networkTimeoutExecutor = Executors.newSingleThreadExecutor(r -> {
    Thread t = new Thread(r, "pgtask-listen-timeout");
    t.setDaemon(true);
    return t;
  });
  private volatile Connection connection;
  private volatile long listeningSince;
  private volatile Runnable onSchedulesChanged = () -> { };

  /** Receives the cancellation hints sent on {@link #CONTROL_CHANNEL}. */
  @FunctionalInterface
  public interface CancelSink {
    /** A notification named {@code taskId}: check it, do not trust it. */
    void hint(long taskId);
  }

  /**
   * {@code onListening} runs on the listener's thread each time both LISTENs are in place, before
   * the first notification is read; an exception from it is logged and the listener carries on.
   */
  public Listener(WorkerConfig config, Runnable onWake, CancelSink onCancel, Runnable onListening) {
    super("pgtask-listen-" + config.workerId(), 1);
    this.config = config;
    this.onWake = onWake;
    this.onCancel = onCancel;
    this.onListening = onListening;
    this.queues = new HashSet<>(config.queues());
  }

  @Override
  protected void onStop() {
    Connection c = connection;
    if (c != null) {
      try {
        c.close();
      } catch (Exception ignored) {
        // closing anyway
      }
    }
    interruptThreads();
    networkTimeoutExecutor.shutdown();
  }

  /**
   * {@code action} runs on the listener's thread when a {@code schedules} control notification
   * arrives (a schedule was declared, changed, paused, resumed or removed; only a hint).
   */
  public void onSchedulesChanged(Runnable action) {
    this.onSchedulesChanged = action;
  }

  /** Since when (System.nanoTime()) the LISTENs have been in place without a break; 0 while they are not. */
  public long listeningSince() {
    return listeningSince;
  }

  /** Times the connection was lost and re-established. */
  public long reconnects() {
    return reconnects.get();
  }

  @Override
  protected void run(int index) {
    long backoffMillis = 100;
    boolean first = true;
    while (isRunning()) {
      try (Connection c = config.listenConnectionFactory().call()) {
        int pingMillis = (int) Math.min(Integer.MAX_VALUE, config.listenerPingInterval().toMillis());
        c.setNetworkTimeout(networkTimeoutExecutor, Math.max(5_000, pingMillis * 2));
        c.setAutoCommit(true);
        DSLContext dsl = Sql.using(c);
        dsl.select(DSL.function("set_config", SQLDataType.CLOB, DSL.val("application_name"),
            DSL.val(truncate("pgtask listen " + config.workerId())), DSL.inline(false))).fetch();
        dsl.query("LISTEN pgtask").execute();          // constant statements: channel names are
        dsl.query("LISTEN pgtask_control").execute();  // fixed, never built from input
        connection = c;
        long since = System.nanoTime();
        if (!first) {
          reconnects.incrementAndGet();
          config.metrics().listenerReconnected();
          log.info("pgtask listener reconnected");
        }
        first = false;
        backoffMillis = 100;
        try {
          onListening.run();
        } catch (RuntimeException e) {
          log.warn("pgtask listener: reading the cancel requests failed ({}); a cancellation requested "
              + "while it was not listening waits for its next reconnect", e.getMessage());
        }
        listeningSince = since; // before this instant, only the check above saw what was sent
        onWake.run(); // notifications sent while we were away are lost: poll once
        PGConnection pg = c.unwrap(PGConnection.class);
        while (isRunning()) {
          PGNotification[] notes = pg.getNotifications(pingMillis);
          if (notes == null || notes.length == 0) {
            dsl.selectOne().fetch(); // health check: fails on a dead socket
            continue;
          }
          boolean wake = false;
          for (PGNotification n : notes) {
            if (CHANNEL.equals(n.getName())) {
              wake |= queues.contains(n.getParameter());
            } else if (CONTROL_CHANNEL.equals(n.getName())) {
              handleControl(n.getParameter());
            }
          }
          if (wake) {
            onWake.run();
          }
        }
      } catch (Exception e) {
        if (!isRunning()) {
          break;
        }
        log.warn("pgtask listener connection lost ({}); reconnecting in {} ms", e.getMessage(), backoffMillis);
      } finally {
        listeningSince = 0;
        connection = null;
      }
      if (!isRunning()) {
        break;
      }
      try {
        Thread.sleep(backoffMillis + ThreadLocalRandom.current().nextLong(backoffMillis / 2 + 1));
      } catch (InterruptedException e) {
        if (!isRunning()) {
          break;
        }
      }
      backoffMillis = Math.min(5_000, backoffMillis * 2);
      onWake.run(); // keep polling while the listener is down
    }
  }

  private void handleControl(String payload) {
    // any role can send anything here: parse cheaply, never log per message, act only on a task id
    if ("schedules".equals(payload)) {
      onSchedulesChanged.run(); // a hint: the scheduler re-reads the next due time
      return;
    }
    if (payload == null || !payload.startsWith("cancel ") || payload.length() > 64) {
      return;
    }
    String[] parts = payload.substring(7).trim().split(" ");
    try {
      if (parts.length == 1 || parts.length == 2) {
        onCancel.hint(Long.parseLong(parts[0]));
      }
    } catch (NumberFormatException e) {
      // not a task id: ignored
    }
  }

  static String truncate(String appName) {
    // application_name is cut at 63 bytes by the server; keep it ASCII-safe and short
    return appName.length() > 63 ? appName.substring(0, 63) : appName;
  }
}
