package dev.pgtask.internal.notifier;

import dev.pgtask.internal.WorkerConfig;
import dev.pgtask.internal.sql.Sql;
import java.sql.Connection;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.jooq.DSLContext;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The listener's start probe, before anything of pgtask's is registered on the session: LISTEN on a
 * channel of its own, NOTIFY it from the worker's pool, and wait for the notification there. On a
 * real session it arrives in milliseconds. Through a transaction pooler the LISTEN went to a server
 * session that went back to the pool after the statement, so the notification is delivered there
 * (to whichever client holds that session then), never here: the worker says so once, unregisters
 * what it can ({@code UNLISTEN *} lands on the pooler's most recently used session, which is most
 * likely that one), and works by polling.
 */
final class NotificationProbe {

  private static final Logger log = LoggerFactory.getLogger(NotificationProbe.class);

  /** How long the probe waits for its own notification. */
  static final long PROBE_WAIT_MILLIS = 5_000;

  /** What the probe found. */
  enum Result {
    /** Notifications arrive (or the session is its own and listens anyway, as configured). */
    HEARS,
    /** The session is shared through a transaction pooler: no notification arrives on it. */
    DEAF,
    /** The listener stopped while the probe waited. */
    STOPPED
  }

  private final WorkerConfig config;

  NotificationProbe(WorkerConfig config) {
    this.config = config;
  }

  /** Probes {@code c} while {@code running}. */
  Result probe(Connection c, BooleanSupplier running) throws Exception {
    String channel = "pgtask_probe_" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
    DSLContext dsl = Sql.using(c);
    dsl.query("LISTEN " + channel).execute(); // the channel is built from digits and letters only
    try (Connection notifier = config.dataSource().getConnection()) {
      notifier.setAutoCommit(true);
      Sql.using(notifier).select(DSL.function("pg_notify", SQLDataType.CLOB, DSL.val(channel), DSL.val("probe"))).fetch();
    }
    PGConnection pg = c.unwrap(PGConnection.class);
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(PROBE_WAIT_MILLIS);
    while (running.getAsBoolean()) {
      long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
      if (left <= 0) {
        break;
      }
      PGNotification[] notes = pg.getNotifications((int) left);
      if (notes != null) {
        for (PGNotification n : notes) {
          if (channel.equals(n.getName())) {
            dsl.query("UNLISTEN " + channel).execute();
            return Result.HEARS;
          }
        }
      }
    }
    if (!running.getAsBoolean()) {
      return Result.STOPPED;
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
      return Result.HEARS;
    }
    try {
      dsl.query("UNLISTEN *").execute();
    } catch (RuntimeException e) {
      // closing anyway
    }
    log.warn("pgtask worker {}: its LISTEN connection receives no notifications (a NOTIFY sent through its pool did"
        + " not arrive within {} ms): it probably goes through a transaction pooler (PgBouncer with pool_mode ="
        + " transaction), where LISTEN lands on a shared server session. Give the worker a direct connection to"
        + " PostgreSQL for LISTEN: PgTaskWorker.Builder.listenUrl(\"jdbc:postgresql://<postgres host>:5432/<db>\")"
        + " (CLI: --listen-url); see docs/deployment.md. Until then it works by polling every {}, and reads cancel"
        + " requests at each poll", config.workerId(), PROBE_WAIT_MILLIS, config.pollInterval());
    return Result.DEAF;
  }
}
