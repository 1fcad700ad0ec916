package dev.pgtask.internal.notifier;

import dev.pgtask.internal.Service;
import dev.pgtask.internal.WorkerConfig;
import dev.pgtask.internal.sql.BackendQueries;
import dev.pgtask.internal.sql.Sql;
import dev.pgtask.internal.sql.TxBounds;
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
 * <p>Protocol: connect, check that notifications arrive on the session (a NOTIFY of its own sent
 * through the pool; none arrives through a transaction pooler: then warn once and stop, the worker
 * polls), name the session ({@code application_name = "pgtask listen <worker>"}),
 * {@code LISTEN pgtask} and {@code LISTEN pgtask_control}, then run the on-listening callback (the
 * worker reads the cancel requests made while it was not listening) and wake the producer once
 * (anything sent while disconnected is lost, so poll). Wait for notifications until the next
 * {@link SessionWork} is due (the worker's poll and its tick, registered with
 * {@link #sessionWork}), then run every work that is due, or may run a little early, in one
 * transaction: a round. An idle worker's poll and heartbeat cost the server one transaction per
 * round, on a session that no pool checks before use. A statement proves the session alive: only
 * after a ping interval without any statement or notification send {@code SELECT 1}. A network
 * timeout on the connection bounds every statement, so a half-open socket is detected instead of
 * blocking forever. Any failure of the connection closes it and
 * reconnects with exponential backoff (100 ms to 5 s, jittered). Notifications on {@code pgtask}
 * carry a queue name: those of this worker's queues wake the producer; or a queue name and a delay
 * in milliseconds ({@code <queue> <ms>}, a task enqueued or handed on for later): those set the
 * producer's due-time timer. Notifications on
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
  private volatile java.util.function.Consumer<java.time.Duration> onDue = d -> { };
  private final Set<String> queues;
  private final AtomicLong reconnects = new AtomicLong();
  private final java.util.concurrent.ExecutorService networkTimeoutExecutor = Executors.newSingleThreadExecutor(r -> {
    Thread t = new Thread(r, "pgtask-listen-timeout");
    t.setDaemon(true);
    return t;
  });
  private volatile Connection connection;
  // the server-side bounds of this session's statements and rounds
  private final TxBounds bounds;
  // the backend of the current session, and of one given up on and not yet ended (listener thread only)
  private BackendQueries.Backend current;
  private BackendQueries.Backend abandoned;
  private volatile long listeningSince;
  private volatile Runnable onSchedulesChanged = () -> { };
  // System.nanoTime() when the last "<queue>" notification of one of this worker's queues arrived (0: none)
  private volatile long lastQueueNotification;

  /** Receives "a task of one of this worker's queues is due in this long" (payload {@code <queue> <ms>}). */
  public void onDue(java.util.function.Consumer<java.time.Duration> onDue) {
    this.onDue = onDue;
  }

  private void dueLater(String millis) {
    long ms;
    try {
      ms = Long.parseLong(millis);
    } catch (NumberFormatException e) {
      return; // not pgtask's (any role may NOTIFY on any channel): the poll still finds its tasks
    }
    // beyond a day the poll finds it long before; a negative delay means due now
    if (ms <= 86_400_000L) {
      onDue.accept(java.time.Duration.ofMillis(Math.max(0, ms)));
    }
  }

  /**
   * {@code System.nanoTime()} when the last notification that one of this worker's queues has a task
   * due now arrived on this session, or 0 when none has (see {@code Producer}, the spill).
   */
  public long lastQueueNotification() {
    return lastQueueNotification;
  }

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
    this.bounds = config.transactionBounds();
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
        // every statement on this session answers within the statement bound: a socket that stays
        // silent past twice that (plus 2 s) is dead, or held by a frozen pooler or network
        c.setNetworkTimeout(networkTimeoutExecutor, (int) Math.min(Integer.MAX_VALUE, bounds.networkTimeout().toMillis()));
        c.setAutoCommit(true);
        DSLContext dsl = Sql.using(c);
        connection = c; // from here, stopping closes it
        if (!receivesNotifications(c)) {
          return; // warned: the worker works by polling
        }
        // a session of its own (proven above): its autocommit statements are bounded too, each round
        // sets its own bounds again
        bounds.applyToSession(c);
        dsl.select(DSL.function("set_config", SQLDataType.CLOB, DSL.val("application_name"),
            DSL.val(truncate("pgtask listen " + config.workerId())), DSL.inline(false))).fetch();
        current = BackendQueries.current(dsl);
        endAbandoned(dsl);
        dsl.query("LISTEN pgtask").execute();          // constant statements: channel names are
        dsl.query("LISTEN pgtask_control").execute();  // fixed, never built from input
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
        long pingNanos = config.listenerPingInterval().toNanos();
        long heard = System.nanoTime(); // the last statement or notification: the session was alive then
        while (isRunning()) {
          long now = System.nanoTime();
          long wakeAt = heard + pingNanos;
          for (SessionWork w : work) {
            if (w.dueAt() - wakeAt < 0) {
              wakeAt = w.dueAt();
            }
          }
          // at least 1 ms: pgjdbc waits forever on 0
          long waitMillis = Math.max(1, java.util.concurrent.TimeUnit.NANOSECONDS.toMillis(wakeAt - now) + 1);
          PGNotification[] notes = pg.getNotifications((int) Math.min(Integer.MAX_VALUE, waitMillis));
          now = System.nanoTime();
          if (notes != null && notes.length > 0) {
            heard = now;
          }
          if (round(c, dsl, now)) {
            heard = System.nanoTime();
          } else if (now - heard >= pingNanos) {
            dsl.selectOne().fetch(); // health check after a quiet ping interval: fails on a dead socket
            heard = System.nanoTime();
          }
          if (notes == null || notes.length == 0) {
            continue;
          }
          boolean wake = false;
          for (PGNotification n : notes) {
            if (CHANNEL.equals(n.getName())) {
              String payload = n.getParameter();
              int space = payload.indexOf(' ');
              if (space < 0) {
                if (queues.contains(payload)) {
                  wake = true;
                  lastQueueNotification = now;
                }
              } else if (queues.contains(payload.substring(0, space))) {
                dueLater(payload.substring(space + 1));
              }
            } else if (CONTROL_CHANNEL.equals(n.getName())) {
              handleControl(n.getParameter());
            }
          }
          if (wake) {
            onWake.run();
          }
        }
      } catch (Exception e) {
        if (current != null) {
          abandoned = current; // the socket is given up, the server's session may live on: end it
        }
        if (!isRunning()) {
          break;
        }
        log.warn("pgtask listener connection lost ({}); reconnecting in {} ms", e.getMessage(), backoffMillis);
      } finally {
        listeningSince = 0;
        connection = null;
        current = null;
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

  /**
   * Ends the backend of the session this listener gave up on (a network timeout or a failed
   * statement), if it still runs: closing the socket does not end it when a pooler, a proxy or a
   * frozen network keeps the server's side open, and it may still be idle in a round's transaction
   * (until its idle bound) or keep a connection slot forever. Checked by pid and backend start, so a
   * reused pid is never hit. A failure leaves it for the next reconnect.
   */
  private void endAbandoned(DSLContext dsl) {
    BackendQueries.Backend old = abandoned;
    if (old == null) {
      return;
    }
    try {
      if (BackendQueries.terminate(dsl, old)) {
        log.info("pgtask listener: ended the server session (pid {}) of the connection it gave up on", old.pid());
      }
      abandoned = null;
    } catch (RuntimeException e) {
      log.warn("pgtask listener: could not end the server session (pid {}) of the connection it gave up on ({});"
          + " trying again at the next reconnect", old.pid(), e.getMessage());
    }
  }

  // the periodic statements run on this session (the poll's probe, the tick); set before start
  private final java.util.List<SessionWork> work = new java.util.concurrent.CopyOnWriteArrayList<>();

  /** Runs {@code w} on this session while it listens (see {@link SessionWork}); call before {@link #start()}. */
  public void sessionWork(SessionWork w) {
    work.add(w);
  }

  /**
   * Runs the works that are due (or may run early) at {@code now} in one transaction; returns
   * whether a statement was sent. A failing statement rolls the round back and is logged; a
   * connection that cannot roll back is lost (the caller reconnects).
   */
  private boolean round(Connection c, DSLContext dsl, long now) throws java.sql.SQLException {
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
    java.util.List<Runnable> after = new java.util.ArrayList<>();
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

  /** How long the start probe waits for its own notification. */
  static final long PROBE_WAIT_MILLIS = 5_000;

  private volatile boolean deaf;

  /** Whether the start probe found that notifications do not arrive on the LISTEN connection (then it stopped). */
  public boolean deaf() {
    return deaf;
  }

  /**
   * The probe, before anything of pgtask's is registered on the session: LISTEN on a channel of its
   * own, NOTIFY it from the worker's pool, and wait for the notification here. On a real session it
   * arrives in milliseconds. Through a transaction pooler the LISTEN went to a server session that
   * went back to the pool after the statement, so the notification is delivered there (to
   * whichever client holds that session then), never here: the worker says so once, unregisters
   * what it can ({@code UNLISTEN *} lands on the pooler's most recently used session, which is
   * most likely that one), and works by polling.
   */
  private boolean receivesNotifications(Connection c) throws Exception {
    String channel = "pgtask_probe_" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
    DSLContext dsl = Sql.using(c);
    dsl.query("LISTEN " + channel).execute(); // the channel is built from digits and letters only
    try (Connection notifier = config.dataSource().getConnection()) {
      notifier.setAutoCommit(true);
      Sql.using(notifier).select(DSL.function("pg_notify", SQLDataType.CLOB, DSL.val(channel), DSL.val("probe"))).fetch();
    }
    PGConnection pg = c.unwrap(PGConnection.class);
    long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(PROBE_WAIT_MILLIS);
    while (isRunning()) {
      long left = java.util.concurrent.TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
      if (left <= 0) {
        break;
      }
      PGNotification[] notes = pg.getNotifications((int) left);
      if (notes != null) {
        for (PGNotification n : notes) {
          if (channel.equals(n.getName())) {
            dsl.query("UNLISTEN " + channel).execute();
            return true;
          }
        }
      }
    }
    if (!isRunning()) {
      return false;
    }
    boolean pooled;
    try {
      pooled = dev.pgtask.internal.pooler.Poolers.probe(config.listenConnectionFactory()).sharesSessions();
    } catch (Exception e) {
      pooled = false;
    }
    if (!pooled) {
      // a session of its own that hears nothing from the pool's database (another database or
      // server?): say so, and listen there anyway, as configured
      dsl.query("UNLISTEN " + channel).execute();
      log.warn("pgtask worker {}: a NOTIFY sent through its pool did not arrive on its LISTEN connection within {} ms:"
          + " do the pool and the listen connection reach the same database? Listening anyway; tasks start at the"
          + " latest at the next poll ({})", config.workerId(), PROBE_WAIT_MILLIS, config.pollInterval());
      return true;
    }
    try {
      dsl.query("UNLISTEN *").execute();
    } catch (RuntimeException e) {
      // closing anyway
    }
    deaf = true;
    log.warn("pgtask worker {}: its LISTEN connection receives no notifications (a NOTIFY sent through its pool did"
        + " not arrive within {} ms): it probably goes through a transaction pooler (PgBouncer with pool_mode ="
        + " transaction), where LISTEN lands on a shared server session. Give the worker a direct connection to"
        + " PostgreSQL for LISTEN: PgTaskWorker.Builder.listenUrl(\"jdbc:postgresql://<postgres host>:5432/<db>\")"
        + " (CLI: --listen-url); see docs/deployment.md. Until then it works by polling every {}, and reads cancel"
        + " requests at each poll", config.workerId(), PROBE_WAIT_MILLIS, config.pollInterval());
    return false;
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
