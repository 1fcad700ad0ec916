package dev.pgtask.internal.sql;

import static dev.pgtask.internal.sql.gen.Tables.SETTINGS;
import static dev.pgtask.internal.sql.gen.Tables.WORKER;

import java.time.Duration;
import java.util.List;
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

  /** Registers (or re-registers) a worker. Locks: its registry row. */
  public static void register(DSLContext dsl, String id, String host, long pid, String version,
      List<String> queues, List<String> kinds, int concurrency) {
    dsl.insertInto(WORKER)
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
        .execute();
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
