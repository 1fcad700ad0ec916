package dev.pgtask.internal.sql;

import static dev.pgtask.internal.sql.gen.Tables.ENQUEUE_BATCH;

import dev.pgtask.internal.sql.gen.Routines;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.JSONB;
import org.jooq.Record1;
import org.jooq.impl.DSL;

/** Inserting tasks: through pgtask.enqueue / pgtask.enqueue_batch, the same path as SQL callers. */
public final class EnqueueQueries {

  private EnqueueQueries() {}

  /** One task ready for the database: payload already serialized, runAt or delay resolved. */
  public record Row(String kind, String payloadJson, String queue, String tenant, Instant runAt,
      Duration delay, int priority, int maxAttempts, String dedupeKey) {}

  /**
   * Enqueues one task through {@code pgtask.enqueue}. Locks: inserts the task row (and a tenant
   * registry row on a tenant's first use); with a dedupe key, waits for a concurrent inserter of
   * the same key to finish.
   */
  public static long enqueue(DSLContext dsl, Row row) {
    Field<Instant> runAt = row.delay() != null
        ? DSL.currentInstant().plus(DSL.val(org.jooq.types.DayToSecond.valueOf(row.delay())))
        : DSL.val(row.runAt(), Instant.class);
    Record1<Long> r = dsl.select(Routines.enqueue(
            DSL.val(row.kind()),
            DSL.val(JSONB.valueOf(row.payloadJson())),
            DSL.val(row.queue()),
            DSL.val(row.tenant(), String.class),
            runAt,
            DSL.val(row.priority()),
            DSL.val(row.maxAttempts()),
            DSL.val(row.dedupeKey(), String.class)))
        .fetchOne();
    return r.value1();
  }

  /**
   * Enqueues a batch through {@code pgtask.enqueue_batch} in one statement; returns the ids in
   * input order. Locks: inserts the task rows (and new tenant registry rows, in name order).
   */
  public static List<Long> enqueueBatch(DSLContext dsl, List<Row> rows) {
    int n = rows.size();
    if (n == 0) {
      return List.of();
    }
    String[] kinds = new String[n];
    JSONB[] payloads = new JSONB[n];
    String[] queues = new String[n];
    String[] tenants = new String[n];
    OffsetDateTime[] runAts = new OffsetDateTime[n];
    Integer[] priorities = new Integer[n];
    Integer[] maxAttempts = new Integer[n];
    String[] dedupeKeys = new String[n];
    boolean anyTenant = false;
    boolean anyRunAt = false;
    boolean anyDedupe = false;
    Instant dbNow = null;
    for (int i = 0; i < n; i++) {
      Row r = rows.get(i);
      kinds[i] = r.kind();
      payloads[i] = JSONB.valueOf(r.payloadJson());
      queues[i] = r.queue();
      tenants[i] = r.tenant();
      anyTenant |= r.tenant() != null;
      if (r.delay() != null) {
        if (dbNow == null) {
          // the database clock, as pgtask.enqueue would use it (now() = transaction start)
          dbNow = dsl.select(DSL.currentInstant()).fetchOne().value1();
        }
        runAts[i] = dbNow.plus(r.delay()).atOffset(ZoneOffset.UTC);
      } else {
        runAts[i] = r.runAt() == null ? null : r.runAt().atOffset(ZoneOffset.UTC);
      }
      anyRunAt |= runAts[i] != null;
      priorities[i] = r.priority();
      maxAttempts[i] = r.maxAttempts();
      dedupeKeys[i] = r.dedupeKey();
      anyDedupe |= r.dedupeKey() != null;
    }
    var result = dsl.select(ENQUEUE_BATCH.ORD, ENQUEUE_BATCH.ID)
        .from(ENQUEUE_BATCH.call(kinds, payloads, queues, anyTenant ? tenants : null,
            anyRunAt ? runAts : null, priorities, maxAttempts, anyDedupe ? dedupeKeys : null))
        .orderBy(ENQUEUE_BATCH.ORD)
        .fetch();
    List<Long> ids = new ArrayList<>(n);
    for (var r : result) {
      ids.add(r.value2());
    }
    return ids;
  }
}
