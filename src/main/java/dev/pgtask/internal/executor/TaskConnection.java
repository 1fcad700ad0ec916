package dev.pgtask.internal.executor;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The connection a handler sees: the task transaction's connection, minus the calls that would
 * end or escape that transaction (commit, rollback of the whole transaction, autocommit, close —
 * close is ignored so try-with-resources is harmless), and with a hook that runs before the
 * handler's first database call. With commit batching the hook opens the task's savepoint, so a
 * handler that does no database work costs no savepoint round trips.
 *
 * <p>It also notices SQL text that changes a setting ({@code SET}, {@code RESET},
 * {@code set_config(...)}), sent through it or through its statements: such a setting outlives the
 * task's savepoint, so a transaction carrying several tasks commits right after that task, before
 * the next one could see it (settings changed inside functions the handler calls are not seen).
 */
final class TaskConnection implements InvocationHandler {

  private static final Set<String> FORBIDDEN = Set.of("commit", "setAutoCommit", "abort", "setTransactionIsolation");
  private static final Set<String> LOCAL = Set.of("toString", "hashCode", "equals", "isClosed", "getAutoCommit",
      "getWarnings", "clearWarnings", "getMetaData", "isReadOnly", "getCatalog", "getSchema",
      "getTransactionIsolation", "getHoldability", "getClientInfo", "getTypeMap", "getNetworkTimeout");

  /** SQL text that changes a setting: a statement starting with SET or RESET, or a call of set_config. */
  private static final Pattern SETTING = Pattern.compile("(?is)(^|;)\\s*(set|reset)\\s|set_config\\s*\\(");
  private static final Set<String> SQL_METHODS = Set.of("prepareStatement", "prepareCall", "execute", "executeQuery",
      "executeUpdate", "executeLargeUpdate", "addBatch");

  private final Connection real;
  private final SqlRunnable beforeFirstUse;
  private boolean used;
  private volatile boolean changedSettings;

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

  /** Whether SQL sent through {@code wrapped} (made by {@link #wrap}) changed a setting. */
  static boolean changedSettings(Connection wrapped) {
    return Proxy.getInvocationHandler(wrapped) instanceof TaskConnection tc && tc.changedSettings;
  }

  private void inspect(String name, Object[] args) {
    if (!changedSettings && SQL_METHODS.contains(name) && args != null && args.length > 0
        && args[0] instanceof String sql && SETTING.matcher(sql).find()) {
      changedSettings = true;
    }
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
    inspect(name, args);
    Object result;
    try {
      result = method.invoke(real, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
    if (name.equals("createStatement") && result instanceof Statement st) {
      return watched(st);
    }
    return result;
  }

  /** A plain statement whose SQL text is inspected too (prepared statements' text is seen when prepared). */
  private Statement watched(Statement st) {
    return (Statement) Proxy.newProxyInstance(TaskConnection.class.getClassLoader(), new Class<?>[] {Statement.class},
        (proxy, method, args) -> {
          inspect(method.getName(), args);
          try {
            return method.invoke(st, args);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
        });
  }
}
