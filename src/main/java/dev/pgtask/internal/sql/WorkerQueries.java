package dev.pgtask.internal.sql;

import static dev.pgtask.internal.sql.gen.Tables.SETTINGS;
import static dev.pgtask.internal.sql.gen.Tables.WORKER;

import dev.pgtask.WorkerIdInUseException;
import java.time.Duration;
import java.util.List;
import org.jooq.Condition;
import org.jooq.DSLContext;
import org.jooq.impl.DSL;
import org.jooq.types.DayToSecond;

/** The worker registry (pgtask.worker, shown by pgtask.workers) and worker settings. */
public final class WorkerQueries {

  private WorkerQueries() {}

  /** The lock namespace from pgtask.settings. Locks: none. */
  public static int readLockNamespace(DSLContext dsl) {
    return dsl.select(SETTINGS.LOCK_NAMESPACE).from(SETTINGS).fetchOne().value1();
  }

  /** How recent a heartbeat proves its worker alive (as {@code pgtask.workers} counts live workers). */
  public static final Duration LIVE_HEARTBEAT = Duration.ofMinutes(1);

  /**
   * Registers (or re-registers) a worker, unless a live worker holds the id: its heartbeat is less
   * than {@link #LIVE_HEARTBEAT} old (database clock) or its LISTEN session ({@code listenSession},
   * null to skip that check) is connected to this database. Then nothing is written and {@link
   * WorkerIdInUseException} names the holder. An id whose holder is gone (stale heartbeat, no
   * session) is taken over. Locks: its registry row.
   */
  public static void register(DSLContext dsl, String id, String host, long pid, String version,
      List<String> queues, List<String> kinds, int concurrency, String listenSession) {
    Condition holderGone = WORKER.LAST_SEEN.le(DSL.currentInstant().minus(DSL.val(DayToSecond.valueOf(LIVE_HEARTBEAT))));
    if (listenSession != null) {
      holderGone = holderGone.andNotExists(DSL.selectOne().from(DSL.table("pg_catalog.pg_stat_activity"))
          .where(DSL.field("datname", String.class).eq(DSL.field("current_database()", String.class)))
          .and(DSL.field("application_name", String.class).eq(listenSession)));
    }
    var registered = dsl.insertInto(WORKER)
        .set(WORKER.ID, id)
        .set(WORKER.HOST, host)
        .set(WORKER.PID, pid)
        .set(WORKER.VERSION, version)
        .set(WORKER.QUEUES, queues.toArray(String[]::new))
        .set(WORKER.KINDS, kinds.toArray(String[]::new))
        .set(WORKER.CONCURRENCY, concurrency)
        .onConflict(WORKER.ID)
        .doUpdate()
        .set(WORKER.HOST, host)
        .set(WORKER.PID, pid)
        .set(WORKER.VERSION, version)
        .set(WORKER.QUEUES, queues.toArray(String[]::new))
        .set(WORKER.KINDS, kinds.toArray(String[]::new))
        .set(WORKER.CONCURRENCY, concurrency)
        .set(WORKER.STARTED_AT, DSL.currentInstant())
        .set(WORKER.LAST_SEEN, DSL.currentInstant())
        .where(holderGone)
        .returning(WORKER.ID)
        .fetchOptional();
    if (registered.isEmpty()) {
      var holder = dsl.select(WORKER.HOST, WORKER.PID, WORKER.STARTED_AT,
              DSL.field("greatest(clock_timestamp() - {0}, interval '0')", DayToSecond.class, WORKER.LAST_SEEN))
          .from(WORKER).where(WORKER.ID.eq(id)).fetchOne();
      String who = holder == null ? "another worker"
          : "the worker on host " + holder.value1() + ", pid " + holder.value2() + " (started " + holder.value3()
              + ", last heartbeat " + holder.value4() + " ago)";
      throw new WorkerIdInUseException(id, "pgtask: worker id '" + id + "' is in use by " + who
          + ", which is alive (heartbeat in the last " + LIVE_HEARTBEAT.toSeconds() + " s, or its LISTEN session"
          + " connected); give each worker process its own id (the default is unique per process start), or stop"
          + " the other worker first");
    }
  }

  /** Heartbeat: refreshes last_seen. Returns 0 when the row was pruned (caller re-registers). Locks: its row. */
  public static int heartbeat(DSLContext dsl, String id) {
    return dsl.update(WORKER).set(WORKER.LAST_SEEN, DSL.currentInstant()).where(WORKER.ID.eq(id)).execute();
  }

  /** Removes a worker's row at shutdown. Locks: its row. */
  public static void deregister(DSLContext dsl, String id) {
    dsl.deleteFrom(WORKER).where(WORKER.ID.eq(id)).execute();
  }

  /** Deletes registry rows not seen for {@code age}. Locks: those rows. */
  public static int pruneStale(DSLContext dsl, Duration age) {
    return dsl.deleteFrom(WORKER)
        .where(WORKER.LAST_SEEN.lt(DSL.currentInstant().minus(DSL.val(DayToSecond.valueOf(age)))))
        .execute();
  }
}
