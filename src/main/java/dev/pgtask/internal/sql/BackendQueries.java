package dev.pgtask.internal.sql;

import java.time.OffsetDateTime;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;

/**
 * The server sessions (backends) of a worker's own connections: which one a connection runs on, and
 * ending one the worker gave up on. A client-side network timeout closes only the client's socket:
 * behind a pooler, a proxy or a network black hole that keeps the server's side of the connection
 * open, the backend lives on (and may hold locks), so the worker ends it from its next session.
 */
public final class BackendQueries {

  /** A backend, named by its process id and its start: a reused pid never matches a later backend. */
  public record Backend(int pid, OffsetDateTime started) {}

  private static final Field<Integer> PID = DSL.field(DSL.name("a", "pid"), SQLDataType.INTEGER);
  private static final Field<OffsetDateTime> STARTED = DSL.field(DSL.name("a", "backend_start"),
      SQLDataType.TIMESTAMPWITHTIMEZONE);

  private BackendQueries() {}

  /** The backend this connection runs on. Locks: none. */
  public static Backend current(DSLContext dsl) {
    var r = dsl.select(PID, STARTED)
        .from(DSL.table(DSL.name("pg_catalog", "pg_stat_activity")).as("a"))
        .where(PID.eq(DSL.field("pg_backend_pid()", SQLDataType.INTEGER)))
        .fetchOne();
    return r == null ? null : new Backend(r.value1(), r.value2());
  }

  /**
   * Ends {@code backend} if it still runs (same pid and same start), as
   * {@code pg_terminate_backend}: its open transaction rolls back and its locks go. A role may end
   * its own backends. Returns whether it was still there. Locks: none.
   */
  public static boolean terminate(DSLContext dsl, Backend backend) {
    Field<Boolean> ended = DSL.function("pg_terminate_backend", SQLDataType.BOOLEAN, PID);
    var r = dsl.select(ended)
        .from(DSL.table(DSL.name("pg_catalog", "pg_stat_activity")).as("a"))
        .where(PID.eq(backend.pid()))
        .and(STARTED.eq(backend.started()))
        .fetch();
    return !r.isEmpty();
  }
}
