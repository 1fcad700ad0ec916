package dev.pgtask.internal.executor;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Set;

/**
 * The connection a handler sees: the task transaction's connection, minus the calls that would
 * end or escape that transaction (commit, rollback of the whole transaction, autocommit, close —
 * close is ignored so try-with-resources is harmless), and with a hook that runs before the
 * handler's first database call. With commit batching the hook opens the task's savepoint, so a
 * handler that does no database work costs no savepoint round trips.
 */
final class TaskConnection implements InvocationHandler {

  private static final Set<String> FORBIDDEN = Set.of("commit", "setAutoCommit", "abort", "setTransactionIsolation");
  private static final Set<String> LOCAL = Set.of("toString", "hashCode", "equals", "isClosed", "getAutoCommit",
      "getWarnings", "clearWarnings", "getMetaData", "isReadOnly", "getCatalog", "getSchema",
      "getTransactionIsolation", "getHoldability", "getClientInfo", "getTypeMap", "getNetworkTimeout");

  private final Connection real;
  private final SqlRunnable beforeFirstUse;
  private boolean used;

  /** Something to run before the first database call; may throw SQLException. */
  @FunctionalInterface
  interface SqlRunnable {
    void run() throws SQLException;
  }

  private TaskConnection(Connection real, SqlRunnable beforeFirstUse) {
    this.real = real;
    this.beforeFirstUse = beforeFirstUse;
  }

  static Connection wrap(Connection real, SqlRunnable beforeFirstUse) {
    return (Connection) Proxy.newProxyInstance(TaskConnection.class.getClassLoader(),
        new Class<?>[] {Connection.class}, new TaskConnection(real, beforeFirstUse));
  }

  @Override
  public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
    String name = method.getName();
    if (name.equals("close")) {
      return null; // the task's connection outlives the handler: closing it is pgtask's job
    }
    if (FORBIDDEN.contains(name) || (name.equals("rollback") && (args == null || args.length == 0))) {
      throw new SQLException("pgtask manages the task's transaction: a handler must not call Connection."
          + name + "() (throw an exception to roll the task back)", "25000");
    }
    if (!LOCAL.contains(name)) {
      synchronized (this) {
        if (!used) {
          used = true;
          beforeFirstUse.run();
        }
      }
    }
    try {
      return method.invoke(real, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }
}
