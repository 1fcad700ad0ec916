package dev.pgtask.spring;

import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskContext;
import dev.pgtask.TaskHandler;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.springframework.aop.support.AopUtils;
import org.springframework.core.ResolvableType;
import org.springframework.jdbc.datasource.ConnectionHolder;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * The handler beans of an application, registered on a worker, each wrapped so that its task's
 * transaction is the Spring transaction of the executor thread while it runs.
 *
 * <p>The binding: a {@link ConnectionHolder} over the task's connection, marked transaction-active
 * and synchronized, bound for the application's {@code DataSource}, and the thread's "actual
 * transaction" flag set, for the duration of {@link PgTaskHandler#handle}. Spring's
 * {@code DataSourceUtils} (under {@code JdbcTemplate}, jOOQ's {@code TransactionAwareDataSourceProxy},
 * {@code PgTask}'s own enqueue) then hands out the task's connection, and a transaction manager sees
 * an existing transaction and participates. A participant that fails marks the holder
 * rollback-only; an attempt that returns normally after that fails instead, so its writes roll back
 * (what {@code UnexpectedRollbackException} does for an ordinary outer transaction).
 */
final class PgTaskHandlers {

  private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(PgTaskHandlers.class);

  private PgTaskHandlers() {}

  /** The payload type of a handler bean (its {@code PgTaskHandler} type argument). */
  static Class<?> payloadType(PgTaskHandler<?> handler) {
    Class<?> target = AopUtils.getTargetClass(handler);
    Class<?> type = ResolvableType.forClass(target).as(PgTaskHandler.class).getGeneric(0).resolve();
    if (type == null) {
      throw new IllegalStateException("pgtask: cannot tell the payload type of handler bean " + target.getName()
          + ": implement PgTaskHandler<YourRecord> with a concrete type argument");
    }
    return type;
  }

  /**
   * Registers every handler on {@code builder}; fails, naming both beans, when two handle one kind.
   *
   * @return the kinds registered, in order
   */
  static List<String> register(PgTaskWorker.Builder builder, Map<String, PgTaskHandler<?>> beans, DataSource appDataSource) {
    Map<String, String> beanOfKind = new LinkedHashMap<>();
    List<String> errors = new ArrayList<>();
    for (Map.Entry<String, PgTaskHandler<?>> e : beans.entrySet()) {
      PgTaskHandler<?> handler = e.getValue();
      String kind;
      try {
        kind = handler.kind();
      } catch (IllegalStateException ex) {
        errors.add("handler bean '" + e.getKey() + "': " + ex.getMessage());
        continue;
      }
      String previous = beanOfKind.putIfAbsent(kind, e.getKey());
      if (previous != null) {
        errors.add("kind '" + kind + "' has two handler beans, '" + previous + "' and '" + e.getKey() + "'");
        continue;
      }
      add(builder, kind, handler, appDataSource);
    }
    if (!errors.isEmpty()) {
      throw new IllegalStateException("pgtask: " + String.join("; ", errors));
    }
    return List.copyOf(beanOfKind.keySet());
  }

  @SuppressWarnings({"unchecked", "rawtypes"})
  private static void add(PgTaskWorker.Builder builder, String kind, PgTaskHandler<?> handler, DataSource ds) {
    Class type = payloadType(handler);
    PgTaskHandler raw = handler;
    TaskHandler bound = (ctx, payload) -> runBound(ds, ctx, () -> raw.handle(ctx, payload));
    builder.handler(kind, type, bound, handler.options());
  }

  interface Body {
    void run() throws Exception;
  }

  /** Runs {@code body} with the task's connection as the thread's Spring transaction on {@code ds}. */
  static void runBound(DataSource ds, TaskContext ctx, Body body) throws Exception {
    Connection connection;
    try {
      connection = ctx.connection();
    } catch (IllegalStateException plainMode) {
      body.run(); // plain mode: no task transaction to join
      return;
    }
    if (TransactionSynchronizationManager.hasResource(ds)) {
      throw new IllegalStateException("pgtask: the executor thread is already bound to a transaction on the"
          + " application's DataSource; task " + ctx.taskId() + " was not run");
    }
    TaskConnectionHolder holder = new TaskConnectionHolder(connection);
    boolean wasActual = TransactionSynchronizationManager.isActualTransactionActive();
    boolean ownSynchronization = !TransactionSynchronizationManager.isSynchronizationActive();
    TransactionSynchronizationManager.bindResource(ds, holder);
    TransactionSynchronizationManager.setActualTransactionActive(true);
    if (ownSynchronization) {
      // active synchronization makes @Transactional methods participate without opening (and, when
      // they return, clearing) a synchronization scope of their own
      TransactionSynchronizationManager.initSynchronization();
    }
    try {
      body.run();
      if (holder.isRollbackOnly()) {
        throw new IllegalStateException("pgtask: task " + ctx.taskId() + " (" + ctx.kind() + "): a transactional"
            + " method called by the handler failed and marked the task's transaction rollback-only; the"
            + " attempt's writes are rolled back");
      }
    } finally {
      if (ownSynchronization) {
        endSynchronization(ctx);
      }
      TransactionSynchronizationManager.unbindResourceIfPossible(ds);
      TransactionSynchronizationManager.setActualTransactionActive(wasActual);
    }
  }

  /**
   * Ends the synchronization scope opened for the handler. Callbacks that code inside the handler
   * registered (a connection of another DataSource to release, a @TransactionalEventListener) are
   * told the outcome is unknown: the task's commit happens later, in pgtask's executor (possibly
   * batched with other tasks), and is not reported back here.
   */
  private static void endSynchronization(TaskContext ctx) {
    List<org.springframework.transaction.support.TransactionSynchronization> registered =
        TransactionSynchronizationManager.getSynchronizations();
    TransactionSynchronizationManager.clearSynchronization();
    if (!registered.isEmpty()) {
      log.warn("pgtask: task {} ({}): {} transaction synchronization callback(s) registered inside the handler"
          + " are told the outcome is unknown (afterCommit callbacks and @TransactionalEventListener(AFTER_COMMIT)"
          + " do not run for task transactions)", ctx.taskId(), ctx.kind(), registered.size());
      for (var s : registered) {
        try {
          s.afterCompletion(org.springframework.transaction.support.TransactionSynchronization.STATUS_UNKNOWN);
        } catch (RuntimeException e) {
          log.warn("pgtask: a transaction synchronization callback failed", e);
        }
      }
    }
  }

  /** The task's connection, as an active transaction that Spring code joins but never ends. */
  static final class TaskConnectionHolder extends ConnectionHolder {
    TaskConnectionHolder(Connection connection) {
      super(connection);
      setSynchronizedWithTransaction(true);
      setTransactionActive(true);
    }
  }
}
