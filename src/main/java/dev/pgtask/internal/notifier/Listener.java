package dev.pgtask.internal.notifier;

import dev.pgtask.internal.Service;
import dev.pgtask.internal.WorkerConfig;
import dev.pgtask.internal.sql.BackendQueries;
import dev.pgtask.internal.sql.Sql;
import dev.pgtask.internal.sql.TxBounds;
import dev.pgtask.internal.wakeup.WakePayload;
import java.sql.Connection;
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
 * <p>Protocol: connect, check that notifications arrive on the session ({@link NotificationProbe}:
 * a NOTIFY of its own sent through the pool; none arrives through a transaction pooler: then warn
 * once and stop, the worker polls), name the session ({@code application_name = "pgtask listen <worker>"}),
 * and join the {@link ListenGroup} of its database: the workers of one JVM on one database share
 * one LISTEN. The group's primary runs {@code LISTEN pgtask} and {@code LISTEN pgtask_control} on
 * its session and passes every notification it receives to every member; the other members' sessions
 * do not LISTEN, so the server does not signal them. Each time the group starts hearing (the
 * primary's LISTENs in place), and after each (re)connect of its own session, a member runs the
 * on-listening callback (the worker reads the cancel requests made while it may not have heard
 * them) and wakes the producer once (anything sent meanwhile may be lost, so poll). Wait for
 * notifications (the primary) or for the group (the others) until the next {@link SessionWork}
 * is due (the worker's poll and its tick, registered with {@link #sessionWork}), then run every
 * work that is due, or may run a little early, in one transaction on the worker's own session: a
 * round. An idle worker's poll and heartbeat cost the server one transaction per round, on a session
 * that no pool checks before use. A statement proves the session alive: only after a ping interval
 * without any statement or notification send {@code SELECT 1}. A network timeout on the connection
 * bounds every statement, so a half-open socket is detected instead of blocking forever. Any failure
 * of the connection closes it and reconnects with exponential backoff (100 ms to 5 s, jittered); a
 * primary's failure makes another member with a session up LISTEN for the group. Every notification
 * on {@code pgtask} and {@code pgtask_control} goes to the {@link Notifications} sink as it arrives
 * (the wake-up protocol decodes and acts on it: {@code dev.pgtask.internal.wakeup}); this class
 * reads none of them.
 *
 * <p>{@link #listeningSince()} says since when (System.nanoTime()) notifications have reached this
 * worker without a break while its own session is up, or 0: a cancellation committed after that
 * instant reaches this worker.
 */
public final class Listener extends Service {

  private static final Logger log = LoggerFactory.getLogger(Listener.class);

  private final WorkerConfig config;
  private final Runnable onWake;
  private final Notifications notifications;
  private final Runnable onListening;
  private final NotificationProbe probe;
  private final AtomicLong reconnects = new AtomicLong();
  private final java.util.concurrent.ExecutorService networkTimeoutExecutor = Executors.newSingleThreadExecutor(r -> {
    Thread t = new Thread(r, "pgtask-listen-timeout");
    t.setDaemon(true);
    return t;
  });
  private volatile Connection connection;
  // the server-side bounds of this session's statements and rounds
  private final TxBounds bounds;
  // the periodic statements run on this session (the poll's probe, the tick); added before start
  private final SessionRounds rounds;
  // the backend of the current session, and of one given up on and not yet ended (listener thread only)
  private BackendQueries.Backend current;
  private BackendQueries.Backend abandoned;
  // this listener's part in its database's ListenGroup (written by the listener thread)
  private final Member member = new Member();
  private volatile ListenGroup group;
  // System.nanoTime() when this listener joined its group: what the primary receives from then on reaches it
  private volatile long joinedAt;
  // the group's hearing whose misses this listener has read (the on-listening callback ran), -1: none
  private volatile long readEpoch = -1;
  // whether this listener's own session is up and named (its rounds can run)
  private volatile boolean sessionUp;
  // whether this listener's session LISTENs (for its group): the server signals it for every notification
  private volatile boolean listens;

  /**
   * {@code onWake} runs on the listener's thread once it listens (notifications sent while it did
   * not are lost: poll) and after each failed connection attempt (keep polling while it is down).
   * {@code onListening} runs on the listener's thread each time both LISTENs are in place, before
   * the first notification is read; an exception from it is logged and the listener carries on.
   */
  public Listener(WorkerConfig config, Runnable onWake, Notifications notifications, Runnable onListening) {
    super("pgtask-listen-" + config.workerId(), 1);
    this.config = config;
    this.onWake = onWake;
    this.notifications = notifications;
    this.onListening = onListening;
    this.probe = new NotificationProbe(config);
    this.bounds = config.transactionBounds();
    this.rounds = new SessionRounds(bounds);
  }

  /** How long a stopping listener waits for another one of its group to LISTEN in its place. */
  static final long HAND_OVER_MILLIS = 500;

  @Override
  protected void onStop() {
    ListenGroup g = group;
    if (g != null && sessionUp) {
      g.handOver(member, HAND_OVER_MILLIS); // the process's other workers keep hearing without a break
    }
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
   * Since when (System.nanoTime()) notifications have reached this worker without a break (its
   * group's LISTENs in place, and this worker's own session up); 0 while they do not.
   */
  public long listeningSince() {
    ListenGroup g = group;
    ListenGroup.Hearing h = g == null ? null : g.hearing();
    if (!sessionUp || h == null || h.epoch() != readEpoch) {
      return 0;
    }
    return Math.max(h.since(), joinedAt);
  }

  /**
   * Whether this listener's own session LISTENs now (it is its group's primary, or hands over): the
   * server signals it for every notification of the database. The other members' sessions do not.
   */
  public boolean listens() {
    return listens;
  }

  /** Times the connection was lost and re-established. */
  public long reconnects() {
    return reconnects.get();
  }

  @Override
  protected void run(int index) {
    try {
      listen();
    } finally {
      ListenGroup g = group;
      if (g != null) {
        g.leave(member);
        group = null;
      }
    }
  }

  private void listen() {
    long backoffMillis = 100;
    boolean first = true;
    while (isRunning()) {
      ListenGroup g = null;
      try (Connection c = config.listenConnectionFactory().call()) {
        // every statement on this session answers within the statement bound: a socket that stays
        // silent past twice that (plus 2 s) is dead, or held by a frozen pooler or network
        c.setNetworkTimeout(networkTimeoutExecutor, (int) Math.min(Integer.MAX_VALUE, bounds.networkTimeout().toMillis()));
        c.setAutoCommit(true);
        DSLContext dsl = Sql.using(c);
        connection = c; // from here, stopping closes it
        NotificationProbe.Result probed = probe.probe(c, this::isRunning);
        if (probed != NotificationProbe.Result.HEARS) {
          deaf = probed == NotificationProbe.Result.DEAF;
          return; // warned: the worker works by polling
        }
        // a session of its own (proven above): its autocommit statements are bounded too, each round
        // sets its own bounds again
        bounds.applyToSession(c);
        dsl.select(DSL.function("set_config", SQLDataType.CLOB, DSL.val("application_name"),
            DSL.val(truncate("pgtask listen " + config.workerId())), DSL.inline(false))).fetch();
        current = BackendQueries.current(dsl);
        endAbandoned(dsl);
        g = join(dsl.resultQuery(ListenGroup.KEY_QUERY).fetchOne(0, String.class));
        readEpoch = -1; // a session of its own again: read what may have been missed, and poll
        g.connected(member);
        sessionUp = true;
        if (!first) {
          reconnects.incrementAndGet();
          config.metrics().listenerReconnected();
          log.info("pgtask listener reconnected");
        }
        first = false;
        backoffMillis = 100;
        waitAndWork(c, dsl, g);
      } catch (Exception e) {
        if (current != null) {
          abandoned = current; // the socket is given up, the server's session may live on: end it
        }
        if (!isRunning()) {
          break;
        }
        log.warn("pgtask listener connection lost ({}); reconnecting in {} ms", e.getMessage(), backoffMillis);
      } finally {
        sessionUp = false;
        listens = false;
        if (g != null) {
          g.disconnected(member);
        }
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

  /** The group of the database named {@code key}, joined (after leaving another one, if the key changed). */
  private ListenGroup join(String key) {
    ListenGroup g = group;
    if (g != null && !g.key().equals(key)) {
      g.leave(member);
      g = null;
    }
    if (g == null) {
      g = ListenGroup.join(key, member);
      joinedAt = System.nanoTime(); // after the join: notifications received from now on reach this worker
      group = g;
    }
    return g;
  }

  /**
   * While the session is up: LISTEN when this listener is its group's primary; read what may have
   * been missed each time the group's hearing starts anew; wait for notifications (the primary) or
   * for the group (the others) until the next work or ping is due; run the rounds.
   */
  private void waitAndWork(Connection c, DSLContext dsl, ListenGroup g) throws Exception {
    PGConnection pg = c.unwrap(PGConnection.class);
    long pingNanos = config.listenerPingInterval().toNanos();
    long heard = System.nanoTime(); // the last statement or notification: the session was alive then
    while (isRunning()) {
      if (!listens && g.isPrimary(member)) {
        dsl.query("LISTEN " + WakePayload.CHANNEL).execute();          // constant statements: channel
        dsl.query("LISTEN " + WakePayload.CONTROL_CHANNEL).execute();  // names are fixed, never input
        listens = true;
        heard = System.nanoTime();
        g.listening(member, heard);
      }
      ListenGroup.Hearing hearing = g.hearing();
      if (hearing != null && hearing.epoch() != readEpoch) {
        try {
          onListening.run();
        } catch (RuntimeException e) {
          log.warn("pgtask listener: reading the cancel requests failed ({}); a cancellation requested "
              + "while it was not listening waits for its next reconnect", e.getMessage());
        }
        readEpoch = hearing.epoch(); // before the hearing's start, only the check above saw what was sent
        onWake.run(); // notifications sent while we were away are lost: poll once
      }
      long now = System.nanoTime();
      long wakeAt = heard + pingNanos;
      wakeAt = rounds.nextDue(wakeAt);
      // at least 1 ms: pgjdbc waits forever on 0
      long waitMillis = Math.max(1, java.util.concurrent.TimeUnit.NANOSECONDS.toMillis(wakeAt - now) + 1);
      PGNotification[] notes = null;
      if (listens) {
        notes = pg.getNotifications((int) Math.min(Integer.MAX_VALUE, waitMillis));
      } else {
        member.await(waitMillis);
      }
      now = System.nanoTime();
      if (notes != null && notes.length > 0) {
        heard = now;
      }
      if (rounds.run(c, dsl, now)) {
        heard = System.nanoTime();
      } else if (now - heard >= pingNanos) {
        dsl.selectOne().fetch(); // health check after a quiet ping interval: fails on a dead socket
        heard = System.nanoTime();
      }
      if (notes != null) {
        for (PGNotification n : notes) {
          g.dispatch(n.getName(), n.getParameter(), now);
        }
      }
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

  /** Runs {@code w} on this session while it listens (see {@link SessionWork}); call before {@link #start()}. */
  public void sessionWork(SessionWork w) {
    rounds.add(w);
  }

  /** This listener in its {@link ListenGroup}: the sink of what the primary receives, and a wake-up for its thread. */
  private final class Member implements ListenGroup.Member {
    private boolean signalled; // guarded by this

    @Override
    public void received(String channel, String payload, long nanos) {
      notifications.received(channel, payload, nanos);
    }

    @Override
    public synchronized void signal() {
      signalled = true;
      notifyAll();
    }

    @Override
    public String name() {
      return config.workerId();
    }

    /** Waits up to {@code millis} for {@link #signal} (the listener's thread, while its session does not LISTEN). */
    synchronized void await(long millis) throws InterruptedException {
      if (!signalled) {
        wait(millis);
      }
      signalled = false;
    }
  }

  private volatile boolean deaf;

  /** Whether the start probe found that notifications do not arrive on the LISTEN connection (then it stopped). */
  public boolean deaf() {
    return deaf;
  }

  /** Receives the notifications on pgtask's channels, on the listener's thread, as they arrive. */
  @FunctionalInterface
  public interface Notifications {
    /** A notification on {@code channel} with {@code payload} arrived at {@code nanos} (System.nanoTime()). */
    void received(String channel, String payload, long nanos);
  }

  static String truncate(String appName) {
    // application_name is cut at 63 bytes by the server; keep it ASCII-safe and short
    return appName.length() > 63 ? appName.substring(0, 63) : appName;
  }
}
