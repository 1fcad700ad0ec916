package dev.pgtask.internal.executor;

import com.fasterxml.jackson.databind.JsonNode;
import dev.pgtask.TaskContext;
import dev.pgtask.internal.sql.ClaimQueries.Claimed;
import dev.pgtask.internal.sql.ExecuteQueries.Fence;
import java.sql.Connection;
import java.time.Instant;
import org.jooq.DSLContext;

/** One attempt of a task being executed: its context for the handler and its stop flags. */
final class RunningTask implements TaskContext {

  /** Why a running task was asked to stop. */
  enum StopReason { NONE, CANCELLED, TIMED_OUT, SHUTDOWN }

  final Claimed claimed;
  final Fence fence;
  final Instant deadline;
  final Thread thread;
  /** Plain mode: no transaction, no connection. */
  final boolean plain;
  private final String workerId;
  private final JsonNode payload;
  private volatile Connection connection;
  private volatile Connection rawConnection;
  private volatile DSLContext dsl;
  private volatile StopReason stopReason = StopReason.NONE;
  private boolean detached; // guarded by this

  RunningTask(Claimed claimed, Fence fence, Instant deadline, String workerId, JsonNode payload, boolean plain) {
    this.plain = plain;
    this.claimed = claimed;
    this.fence = fence;
    this.deadline = deadline;
    this.thread = Thread.currentThread();
    this.workerId = workerId;
    this.payload = payload;
  }

  /** The handler's view of the connection, its jOOQ context, and the pooled connection behind them. */
  synchronized void attach(Connection connection, DSLContext dsl, Connection raw) {
    this.connection = connection;
    this.dsl = dsl;
    this.rawConnection = raw;
  }

  /** The handler is done with the connection: no stop request may touch it any more. */
  synchronized void detach() {
    this.connection = null;
    this.dsl = null;
    this.rawConnection = null;
    this.detached = true;
  }

  synchronized boolean detached() {
    return detached;
  }

  /** Records the first reason to stop; later ones do not override it. */
  synchronized boolean requestStop(StopReason reason) {
    if (stopReason != StopReason.NONE) {
      return false;
    }
    stopReason = reason;
    return true;
  }

  StopReason stopReason() {
    return stopReason;
  }

  /** The pooled connection (for cancelling the running statement), or null. */
  Connection rawConnection() {
    return rawConnection;
  }

  @Override
  public long taskId() {
    return claimed.id();
  }

  @Override
  public String kind() {
    return claimed.kind();
  }

  @Override
  public String queue() {
    return claimed.queue();
  }

  @Override
  public String tenant() {
    return claimed.tenant();
  }

  @Override
  public int attempt() {
    return claimed.attempt();
  }

  @Override
  public int maxAttempts() {
    return claimed.maxAttempts();
  }

  @Override
  public String idempotencyKey() {
    return "pgtask-" + claimed.id();
  }

  @Override
  public String workerId() {
    return workerId;
  }

  @Override
  public Instant deadline() {
    return deadline;
  }

  @Override
  public JsonNode payload() {
    return payload;
  }

  @Override
  public Connection connection() {
    Connection c = connection;
    if (c == null) {
      throw new IllegalStateException(plain
          ? "task " + claimed.id() + " of kind " + claimed.kind() + " runs in plain mode: it has no transaction"
          : "the task's transaction is over");
    }
    return c;
  }

  @Override
  public DSLContext dsl() {
    DSLContext d = dsl;
    if (d == null) {
      throw new IllegalStateException(plain
          ? "task " + claimed.id() + " of kind " + claimed.kind() + " runs in plain mode: it has no transaction"
          : "the task's transaction is over");
    }
    return d;
  }
}
