package dev.pgtask;

import dev.pgtask.internal.wakeup.LocalWake;
import dev.pgtask.internal.sql.EnqueueQueries;
import dev.pgtask.internal.sql.Sql;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import javax.sql.DataSource;
import org.jooq.DSLContext;

/**
 * {@link PgTask}'s enqueues: one task or a batch, in its own transaction, in the caller's current
 * transaction ({@link CurrentTransaction}) or on the caller's connection. Every one goes through
 * {@code pgtask.enqueue} / {@code pgtask.enqueue_batch}; a commit made here wakes this JVM's
 * workers of the task's queue at once ({@link LocalWake}), before the commit's {@code NOTIFY}.
 */
final class Enqueuer {

  /** The range of PostgreSQL's timestamptz. */
  private static final Instant FIRST_RUN_AT = LocalDate.of(-4713, 11, 24).atStartOfDay(ZoneOffset.UTC).toInstant();
  private static final Instant LAST_RUN_AT = LocalDateTime.of(294276, 12, 31, 23, 59, 59, 999_999_000)
      .toInstant(ZoneOffset.UTC);

  private final DataSource dataSource;
  private final DSLContext dsl;
  private final Payloads payloads;
  private final PgTaskMetrics metrics;
  private final PgTaskTracing tracing;
  private final CurrentTransaction currentTransaction;

  Enqueuer(DataSource dataSource, DSLContext dsl, Payloads payloads, PgTaskMetrics metrics, PgTaskTracing tracing,
      CurrentTransaction currentTransaction) {
    this.dataSource = dataSource;
    this.dsl = dsl;
    this.payloads = payloads;
    this.metrics = metrics;
    this.tracing = tracing;
    this.currentTransaction = currentTransaction;
  }

  /** One task, in the caller's current transaction if there is one, else in its own. */
  long enqueue(NewTask task) {
    Connection current = currentTransaction.connection();
    if (current != null) {
      try {
        return enqueue(current, task);
      } finally {
        currentTransaction.release(current);
      }
    }
    long id = enqueueWith(dsl, task);
    wakeLocalWorkers(task);
    return id;
  }

  /** One task inside the caller's transaction on {@code tx}. */
  long enqueue(Connection tx, NewTask task) {
    Objects.requireNonNull(tx, "tx");
    return enqueueWith(Sql.using(tx), task);
  }

  /** A batch, in the caller's current transaction if there is one, else in one transaction of its own. */
  List<Long> enqueueAll(List<NewTask> tasks) {
    Objects.requireNonNull(tasks, "tasks");
    if (tasks.isEmpty()) {
      return List.of();
    }
    Connection current = currentTransaction.connection();
    if (current != null) {
      try {
        return enqueueAll(current, tasks);
      } finally {
        currentTransaction.release(current);
      }
    }
    // one transaction: a delay is added to the database's now() read in the same transaction that
    // inserts, so run_at - created_at equals the delay exactly
    try {
      List<Long> ids = dsl.transactionResult(cfg -> enqueueAllWith(cfg.dsl(), tasks));
      Set<String> woken = new HashSet<>();
      for (NewTask t : tasks) {
        if (!woken.contains(t.options().queue()) && wakeLocalWorkers(t)) {
          woken.add(t.options().queue());
        }
      }
      return ids;
    } catch (RuntimeException e) {
      throw Failures.of("enqueue batch", e);
    }
  }

  /** A batch inside the caller's transaction on {@code tx}. */
  List<Long> enqueueAll(Connection tx, List<NewTask> tasks) {
    Objects.requireNonNull(tx, "tx");
    return enqueueAllWith(Sql.using(tx), tasks);
  }

  private long enqueueWith(DSLContext ctx, NewTask task) {
    EnqueueQueries.Row row = toRow(task, -1, null);
    long id;
    try {
      id = EnqueueQueries.enqueue(ctx, row, traceParent());
    } catch (RuntimeException e) {
      throw Failures.of("enqueue", e);
    }
    metrics.enqueued(row.queue(), 1);
    return id;
  }

  private List<Long> enqueueAllWith(DSLContext ctx, List<NewTask> tasks) {
    Objects.requireNonNull(tasks, "tasks");
    List<EnqueueQueries.Row> rows = new ArrayList<>(tasks.size());
    // the batch's tasks by reference, for withDependsOn(NewTask...): position of each, 1-based
    Map<NewTask, Integer> earlier = new IdentityHashMap<>();
    for (int i = 0; i < tasks.size(); i++) {
      rows.add(toRow(tasks.get(i), i, earlier));
      earlier.putIfAbsent(tasks.get(i), i + 1);
    }
    List<Long> ids;
    try {
      ids = EnqueueQueries.enqueueBatch(ctx, rows, traceParent());
    } catch (RuntimeException e) {
      throw Failures.of("enqueue batch", e);
    }
    if (metrics != PgTaskMetrics.NOOP) {
      Map<String, Integer> perQueue = new HashMap<>();
      for (EnqueueQueries.Row r : rows) {
        perQueue.merge(r.queue(), 1, Integer::sum);
      }
      perQueue.forEach(metrics::enqueued);
    }
    return ids;
  }

  /** With tracing: the current traceparent, or "" for none (so nothing set earlier is inherited); null without. */
  private String traceParent() {
    if (tracing == PgTaskTracing.NONE) {
      return null;
    }
    String tp = tracing.currentTraceParent();
    return tp == null ? "" : tp;
  }

  /**
   * After a commit made here: returns whether the task is due now and, if so, wakes this JVM's
   * workers over the same DataSource that serve the task's queue (see {@link LocalWake}). The
   * commit's NOTIFY follows anyway.
   */
  private boolean wakeLocalWorkers(NewTask task) {
    TaskOptions o = task.options();
    boolean dueNow = o.debounce() == null && o.dependsOn().isEmpty() && o.dependsOnTasks().isEmpty()
        && (o.delay() == null || o.delay().isZero() || o.delay().isNegative())
        && (o.runAt() == null || !o.runAt().isAfter(Instant.now()));
    if (dueNow) {
      LocalWake.committed(dataSource, o.queue());
    }
    return dueNow;
  }

  /** {@code earlier}: the batch's earlier tasks by reference (1-based positions); null for a single enqueue. */
  private EnqueueQueries.Row toRow(NewTask task, int index, Map<NewTask, Integer> earlier) {
    Objects.requireNonNull(task, "task");
    TaskOptions o = task.options();
    if (o.queue() == null) {
      // pgtask.enqueue rejects a NULL queue while enqueue_batch reads a NULL element as "default":
      // reject it here so a task is treated alike alone and in a batch
      throw new InvalidTaskException("task_queue_format", "pgtask: invalid task"
          + Payloads.where(index) + ": queue must not be empty");
    }
    if (o.runAt() != null && (o.runAt().isBefore(FIRST_RUN_AT) || o.runAt().isAfter(LAST_RUN_AT))
        || o.delay() != null && o.delay().compareTo(Duration.between(Instant.now(), LAST_RUN_AT)) > 0) {
      // the database refuses infinity by this name; an Instant it cannot hold would fail in the driver
      throw new InvalidTaskException("task_run_at_finite", "pgtask: invalid task" + Payloads.where(index)
          + ": run_at must be a finite time the database can hold (4713 BC to 294276 AD), not "
          + (o.runAt() != null ? o.runAt() : "now + " + o.delay()));
    }
    if (o.debounce() != null && index >= 0) {
      // pgtask.enqueue_batch has no debounce: each debounced enqueue is an upsert of its own
      throw new InvalidTaskException("task_debounce", "pgtask: invalid task" + Payloads.where(index)
          + ": debounce is not taken in a batch; enqueue a debounced task on its own (PgTask.enqueue)");
    }
    Long[] dependsOn = null;
    String dependsOnJson = null;
    if (!o.dependsOn().isEmpty() || !o.dependsOnTasks().isEmpty()) {
      if (earlier == null) {
        if (!o.dependsOnTasks().isEmpty()) {
          throw new InvalidTaskException("task_parent_missing", "pgtask: invalid task: it depends on a task by"
              + " reference (TaskOptions.withDependsOn(NewTask...)), which names an earlier task of the same batch"
              + " (PgTask.enqueueAll); alone, name the parent by its id");
        }
        dependsOn = o.dependsOn().toArray(Long[]::new);
      } else {
        StringBuilder json = new StringBuilder("[");
        for (Long id : o.dependsOn()) {
          json.append(json.length() > 1 ? "," : "").append(id);
        }
        for (NewTask ref : o.dependsOnTasks()) {
          Integer position = earlier.get(ref);
          if (position == null) {
            throw new InvalidTaskException("task_parent_missing", "pgtask: invalid task" + Payloads.where(index)
                + ": it depends on a task by reference that is not an earlier task of this batch");
          }
          json.append(json.length() > 1 ? "," : "").append("{\"batch\":").append(position).append('}');
        }
        dependsOnJson = json.append(']').toString();
      }
    }
    return new EnqueueQueries.Row(task.kind(), payloads.json(task.payload(), index), o.queue(),
        o.tenant(), o.runAt(), o.delay(), o.priority(), o.maxAttempts(), o.dedupeKey(), o.debounce(),
        dependsOn, dependsOnJson, dependsOn == null && dependsOnJson == null ? null : o.onParentFailure().sqlName());
  }
}
