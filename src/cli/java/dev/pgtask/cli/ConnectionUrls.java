package dev.pgtask.cli;

import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Resolves where the CLI connects into {@link ConnectionSettings}, the way PostgreSQL users expect:
 * <ol>
 *   <li>{@code --url}, else</li>
 *   <li>the environment variable {@code PGTASK_URL}, else</li>
 *   <li>the libpq variables {@code PGHOST PGPORT PGDATABASE PGUSER PGPASSWORD} with libpq's
 *       defaults: host {@code localhost}, port 5432, user = the OS user, database = the user.</li>
 * </ol>
 * A URL is either a JDBC URL ({@code jdbc:postgresql://host:port/db?user=u&password=p}) or a libpq
 * URI ({@code postgres://} or {@code postgresql://user:password@host:port/db?sslmode=require}),
 * converted to JDBC. As with libpq, what a URL leaves out (user, password; for a URI also host,
 * port and database) comes from the libpq variables and their defaults.
 */
final class ConnectionUrls {

  private static final String JDBC_PREFIX = "jdbc:postgresql:";

  private ConnectionUrls() {}

  /** Resolves from an explicit environment (for tests). Throws {@link CliException} (usage) for a bad URL. */
  static ConnectionSettings resolve(String urlOption, Map<String, String> env, String osUser) {
    if (urlOption != null && !urlOption.isBlank()) {
      return fromUrl(urlOption.trim(), env, osUser, "--url");
    }
    String fromEnv = env.get("PGTASK_URL");
    if (fromEnv != null && !fromEnv.isBlank()) {
      return fromUrl(fromEnv.trim(), env, osUser, "PGTASK_URL");
    }
    return fromParts(null, null, null, null, null, new LinkedHashMap<>(), env, osUser, "PG* variables");
  }

  private static ConnectionSettings fromUrl(String url, Map<String, String> env, String osUser, String source) {
    if (url.startsWith(JDBC_PREFIX)) {
      Map<String, String> params = query(url);
      String urlUser = params.get("user");
      String user = urlUser != null ? urlUser : libpqUser(env, osUser);
      String password = params.containsKey("password") ? null : blankToNull(env.get("PGPASSWORD"));
      return new ConnectionSettings(url, user, password, source);
    }
    if (url.startsWith("postgres://") || url.startsWith("postgresql://")) {
      return fromUri(url, env, osUser, source);
    }
    throw new CliException(ExitCodes.USAGE, source + " '" + ConnectionSettings.redact(url)
        + "' is not a PostgreSQL URL: use jdbc:postgresql://HOST:PORT/DB or postgresql://USER@HOST:PORT/DB");
  }

  /** Converts a libpq URI: {@code postgresql://[user[:password]@][host][:port][,...][/db][?k=v&...]}. */
  private static ConnectionSettings fromUri(String uri, Map<String, String> env, String osUser, String source) {
    String rest = uri.substring(uri.indexOf("://") + 3);
    String queryPart = "";
    int q = rest.indexOf('?');
    if (q >= 0) {
      queryPart = rest.substring(q + 1);
      rest = rest.substring(0, q);
    }
    String path = null;
    int slash = rest.indexOf('/');
    if (slash >= 0) {
      path = rest.substring(slash + 1);
      rest = rest.substring(0, slash);
    }
    String user = null;
    String password = null;
    int at = rest.lastIndexOf('@');
    if (at >= 0) {
      String userInfo = rest.substring(0, at);
      rest = rest.substring(at + 1);
      int colon = userInfo.indexOf(':');
      user = decode(colon >= 0 ? userInfo.substring(0, colon) : userInfo);
      password = colon >= 0 ? decode(userInfo.substring(colon + 1)) : null;
    }
    List<String> hosts = new ArrayList<>();
    List<String> ports = new ArrayList<>();
    if (!rest.isEmpty()) {
      for (String hp : rest.split(",", -1)) {
        String host = hp;
        String port = "";
        if (hp.startsWith("[")) {
          int close = hp.indexOf(']');
          if (close < 0) {
            throw badUri(uri, source, "unclosed '[' in host");
          }
          host = hp.substring(0, close + 1);
          String after = hp.substring(close + 1);
          port = after.startsWith(":") ? after.substring(1) : after;
        } else {
          int colon = hp.lastIndexOf(':');
          if (colon >= 0) {
            host = hp.substring(0, colon);
            port = hp.substring(colon + 1);
          }
        }
        hosts.add(decode(host));
        ports.add(port);
      }
    }
    String db = path == null || path.isEmpty() ? null : decode(path);
    Map<String, String> params = new LinkedHashMap<>();
    String hostParam = null;
    String portParam = null;
    if (!queryPart.isEmpty()) {
      for (String kv : queryPart.split("&")) {
        if (kv.isEmpty()) {
          continue;
        }
        int eq = kv.indexOf('=');
        String k = decode(eq >= 0 ? kv.substring(0, eq) : kv);
        String v = eq >= 0 ? decode(kv.substring(eq + 1)) : "";
        switch (k) {
          case "user" -> user = v;
          case "password" -> password = v;
          case "dbname" -> db = v;
          case "host" -> hostParam = v;
          case "port" -> portParam = v;
          case "application_name" -> params.put("ApplicationName", v);
          case "connect_timeout" -> params.put("connectTimeout", v);
          case "target_session_attrs" -> params.put("targetServerType", targetServerType(v, uri, source));
          default -> params.put(k, v);
        }
      }
    }
    String hostList = hostParam != null ? hostParam
        : hosts.stream().allMatch(String::isEmpty) ? null : String.join(",", hosts);
    String portList = portParam != null ? portParam
        : ports.stream().allMatch(String::isEmpty) ? null : String.join(",", ports);
    return fromParts(hostList, portList, db, user, password, params, env, osUser, source);
  }

  /** Fills what is missing from the libpq variables and defaults, then builds the JDBC URL. */
  private static ConnectionSettings fromParts(String hostList, String portList, String db, String user,
      String password, Map<String, String> params, Map<String, String> env, String osUser, String source) {
    String hostSpec = hostList != null ? hostList : envOr(env, "PGHOST", "localhost");
    String portSpec = portList != null ? portList : envOr(env, "PGPORT", "5432");
    String u = user != null && !user.isEmpty() ? user : libpqUser(env, osUser);
    String d = db != null && !db.isEmpty() ? db : envOr(env, "PGDATABASE", u);
    String p = password != null ? password : blankToNull(env.get("PGPASSWORD"));
    if (!params.containsKey("sslmode") && blankToNull(env.get("PGSSLMODE")) != null) {
      params.put("sslmode", env.get("PGSSLMODE"));
    }
    if (!params.containsKey("connectTimeout") && blankToNull(env.get("PGCONNECT_TIMEOUT")) != null) {
      params.put("connectTimeout", env.get("PGCONNECT_TIMEOUT"));
    }
    String[] hosts = hostSpec.split(",", -1);
    String[] ports = portSpec.split(",", -1);
    if (ports.length != 1 && ports.length != hosts.length) {
      throw new CliException(ExitCodes.USAGE, source + ": " + hosts.length + " hosts but " + ports.length
          + " ports; give one port, or one per host");
    }
    StringBuilder url = new StringBuilder("jdbc:postgresql://");
    for (int i = 0; i < hosts.length; i++) {
      String host = hosts[i].trim();
      if (host.isEmpty() || host.startsWith("/")) {
        host = "localhost"; // pgjdbc has no Unix-domain sockets: libpq's socket default becomes TCP localhost
      } else if (host.contains(":") && !host.startsWith("[")) {
        host = "[" + host + "]";
      }
      String port = (ports.length == 1 ? ports[0] : ports[i]).trim();
      if (port.isEmpty()) {
        port = "5432";
      }
      if (!port.matches("\\d{1,5}")) {
        throw new CliException(ExitCodes.USAGE, source + ": port '" + port + "' is not a number");
      }
      url.append(i == 0 ? "" : ",").append(host).append(':').append(port);
    }
    url.append('/').append(encode(d));
    String sep = "?";
    for (Map.Entry<String, String> e : params.entrySet()) {
      url.append(sep).append(encode(e.getKey())).append('=').append(encode(e.getValue()));
      sep = "&";
    }
    return new ConnectionSettings(url.toString(), u, p, source);
  }

  private static String targetServerType(String v, String uri, String source) {
    return switch (v) {
      case "any" -> "any";
      case "read-write", "primary" -> "primary";
      case "read-only", "standby" -> "secondary";
      case "prefer-standby" -> "preferSecondary";
      default -> throw badUri(uri, source, "target_session_attrs '" + v + "' is not supported");
    };
  }

  private static CliException badUri(String uri, String source, String why) {
    return new CliException(ExitCodes.USAGE, source + " '" + ConnectionSettings.redact(uri) + "': " + why);
  }

  static Map<String, String> query(String url) {
    Map<String, String> params = new LinkedHashMap<>();
    int q = url.indexOf('?');
    if (q >= 0) {
      for (String kv : url.substring(q + 1).split("&")) {
        int eq = kv.indexOf('=');
        if (eq > 0) {
          params.put(kv.substring(0, eq), decode(kv.substring(eq + 1)));
        }
      }
    }
    return params;
  }

  private static String libpqUser(Map<String, String> env, String osUser) {
    return envOr(env, "PGUSER", osUser);
  }

  private static String envOr(Map<String, String> env, String name, String fallback) {
    String v = blankToNull(env.get(name));
    return v != null ? v : fallback;
  }

  private static String blankToNull(String s) {
    return s == null || s.isBlank() ? null : s;
  }

  private static String decode(String s) {
    return URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8);
  }

  private static String encode(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20");
  }
}
