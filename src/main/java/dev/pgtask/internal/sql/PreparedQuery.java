package dev.pgtask.internal.sql;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.List;
import java.util.Map;
import org.jooq.DSLContext;
import org.jooq.Param;
import org.jooq.Query;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;

/**
 * A jOOQ-typed query rendered once, for the per-task hot path: building and rendering a jOOQ query
 * costs more CPU than the database spends executing these statements. The query is written with
 * jOOQ against the generated classes like every other; only its SQL text is kept, with named
 * parameters bound by name on each execution through a plain (and driver-cached) prepared
 * statement.
 */
final class PreparedQuery {

  private final String sql;
  private final List<String> names;
  private final int[] sqlTypes;

  private PreparedQuery(String sql, List<String> names, int[] sqlTypes) {
    this.sql = sql;
    this.names = names;
    this.sqlTypes = sqlTypes;
  }

  /** Renders {@code query}; every bind value in it must be a named {@code DSL.param}. */
  static PreparedQuery of(Query query) {
    DSLContext ctx = DSL.using(SQLDialect.POSTGRES, Sql.settings());
    String sql = ctx.render(query);
    Map<String, Param<?>> params = new java.util.LinkedHashMap<>();
    ctx.extractParams(query).forEach((name, param) -> {
      if (!param.isInline()) {
        params.put(name, param);
      }
    });
    long placeholders = sql.chars().filter(ch -> ch == '?').count();
    if (placeholders != params.size()) {
      throw new IllegalStateException("every bind value of a prepared query must be a named param ("
          + placeholders + " placeholders, params " + params.keySet() + "): " + sql);
    }
    for (String name : params.keySet()) {
      if (name.matches("\\d+")) {
        throw new IllegalStateException("unnamed bind value in a prepared query: " + sql);
      }
    }
    // a NULL is bound with its parameter's type, as a value would be: the driver keeps one
    // server-side statement instead of preparing another when a parameter's type changes
    int[] sqlTypes = params.values().stream().mapToInt(p -> p.getDataType().getSQLType()).toArray();
    return new PreparedQuery(sql, List.copyOf(params.keySet()), sqlTypes);
  }

  /** A prepared statement with the values bound by name; the caller closes it. */
  PreparedStatement prepare(Connection connection, Map<String, ?> values) throws SQLException {
    PreparedStatement ps = connection.prepareStatement(sql);
    try {
      for (int i = 0; i < names.size(); i++) {
        String name = names.get(i);
        if (!values.containsKey(name)) {
          throw new IllegalArgumentException("no value for parameter " + name);
        }
        Object value = values.get(name);
        if (value == null) {
          ps.setNull(i + 1, sqlTypes[i]);
        } else {
          ps.setObject(i + 1, value);
        }
      }
      return ps;
    } catch (SQLException | RuntimeException e) {
      ps.close();
      throw e;
    }
  }

  /**
   * This query followed by a constant statement without parameters, sent together: the driver
   * pipelines both and waits for the server once. An error in the first skips the second.
   */
  PreparedQuery followedBy(String constantStatement) {
    return new PreparedQuery(sql + ";\n" + constantStatement, names, sqlTypes);
  }

  /** A constant statement without parameters, then this query, sent together (see {@link #followedBy(String)}). */
  PreparedQuery precededBy(String constantStatement) {
    return new PreparedQuery(constantStatement + ";\n" + sql, names, sqlTypes);
  }

  /**
   * This query followed by another, sent together. Parameters of the same name in both take the
   * same value.
   */
  PreparedQuery followedBy(PreparedQuery next) {
    List<String> allNames = new java.util.ArrayList<>(names);
    allNames.addAll(next.names);
    int[] allTypes = java.util.Arrays.copyOf(sqlTypes, sqlTypes.length + next.sqlTypes.length);
    System.arraycopy(next.sqlTypes, 0, allTypes, sqlTypes.length, next.sqlTypes.length);
    return new PreparedQuery(sql + ";\n" + next.sql, List.copyOf(allNames), allTypes);
  }

  String sql() {
    return sql;
  }
}
