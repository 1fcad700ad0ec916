package dev.pgtask.internal.complete;

import dev.pgtask.DiscardTaskException;
import dev.pgtask.RetryTaskException;
import dev.pgtask.SnoozeTaskException;
import dev.pgtask.internal.WorkerConfig;
import dev.pgtask.internal.executor.LocalTask;
import dev.pgtask.internal.sql.TaskSql;
import dev.pgtask.internal.sql.Sql;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The retry policy and the mapping from what happened to an attempt to its {@link Outcome}: the
 * one place where outcomes are decided. Every {@link Throwable} a handler throws maps to an
 * outcome (an {@link Error} fails the attempt like an exception does).
 */
public final class Outcomes {

  private static final int MAX_ERROR_LENGTH = 2_000;

  private final WorkerConfig config;

  public Outcomes(WorkerConfig config) {
    this.config = config;
  }

  /** What a handler's throwable means for the attempt. */
  public Outcome ofFailure(LocalTask t, Throwable e) {
    if (e instanceof SnoozeTaskException s) {
      return new Outcome.Snoozed(s.delay());
    }
    if (e instanceof DiscardTaskException d) {
      return Outcome.Failed.discarded("discarded by handler: " + d.getMessage()).because(e);
    }
    if (e instanceof RetryTaskException r) {
      return new Outcome.Failed(describe(e), r.at() == null ? r.delay() : Duration.ZERO, r.at(), false).because(e);
    }
    return Outcome.Failed.retry(describe(e), backoff(t.attempt())).because(e);
  }

  /** What a stop request means for the attempt it stopped (or kept from starting). */
  public Outcome ofStop(LocalTask t, LocalTask.Stop stop) {
    return switch (stop) {
      case CANCELLED -> new Outcome.Cancelled(TaskSql.CANCELLED_AS_REQUESTED);
      case SHUTDOWN -> new Outcome.Released();
      case TIMED_OUT -> Outcome.Failed.retry("timed out after " + timeout(t).toMillis() + " ms",
          backoff(t.attempt()));
      case LOST -> new Outcome.Lost("no longer this worker's claim");
      case NONE -> throw new IllegalStateException("not stopped");
    };
  }

  /** The handler returned, but an SQL error inside it (caught there) had aborted the task's transaction. */
  public Outcome abortedByHandler(LocalTask t) {
    return Outcome.Failed.retry("the handler returned normally, but one of its SQL statements failed and aborted the "
        + "task's transaction (the handler caught the error instead of letting it propagate)", backoff(t.attempt()));
  }

  /** The handler sent COMMIT or ROLLBACK (or ended the transaction otherwise) behind the worker's back. */
  public Outcome endedByHandler(LocalTask t) {
    return Outcome.Failed.retry("the handler ended the task's transaction itself (COMMIT or ROLLBACK sent as SQL); "
        + "pgtask manages the task's transaction: throw an exception to roll the task back", backoff(t.attempt()));
  }

  /** The task's transaction was lost with everything in it (connection, server or COMMIT failure). */
  public Outcome transactionFailed(LocalTask t, Throwable e) {
    return Outcome.Failed.retry("task transaction failed: " + describe(e), backoff(t.attempt())).because(e);
  }

  public Duration timeout(LocalTask t) {
    return timeout(config.handlers().get(t.kind()));
  }

  /** A kind's task timeout: its handler's own, or the worker's. */
  public Duration timeout(dev.pgtask.internal.HandlerEntry<?> h) {
    return h != null && h.options().timeout() != null ? h.options().timeout() : config.taskTimeout();
  }

  /** Exponential backoff with ±10% jitter: base * 2^(attempt-1), capped. */
  Duration backoff(int attempt) {
    long base = config.retryBackoffBase().toMillis();
    long cap = config.retryBackoffCap().toMillis();
    long d = attempt >= 62 ? cap : Math.min(cap, base * (1L << Math.max(0, attempt - 1)));
    if (d < 0) {
      d = cap;
    }
    long jitter = d / 10;
    long j = jitter > 0 ? ThreadLocalRandom.current().nextLong(-jitter, jitter + 1) : 0;
    return Duration.ofMillis(Math.max(0, d + j));
  }

  public static String describe(Throwable t) {
    String s = t.getClass().getName() + (t.getMessage() == null ? "" : ": " + t.getMessage());
    String state = Sql.sqlState(t);
    if (state != null && !s.contains(state)) {
      s += " (SQLSTATE " + state + ")";
    }
    return s.length() > MAX_ERROR_LENGTH ? s.substring(0, MAX_ERROR_LENGTH) + "…" : s;
  }
}
