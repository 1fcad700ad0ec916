package dev.pgtask.cli;

import dev.pgtask.internal.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.util.List;
import java.util.Map;

/**
 * The demo's embedded default: when the user configured no server ({@code --url}, {@code PGTASK_URL},
 * the libpq variables) and none answers on libpq's defaults, {@code pgtask demo} starts a real
 * PostgreSQL from the binaries the CLI jar carries (see {@link EmbeddedPostgres}), uses it and stops
 * it. A configured server always wins, even when it does not answer: then the demo fails and says
 * why, as before.
 */
final class EmbeddedServer {

  /** The libpq variables that choose a server (a password alone does not). */
  static final List<String> SERVER_VARIABLES =
      List.of("PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGUSER", "PGSERVICE");

  private EmbeddedServer() {}

  /** True when {@code settings} came from libpq's defaults only: nothing in {@code env} chose a server. */
  static boolean nothingConfigured(ConnectionSettings settings, Map<String, String> env) {
    if (!"PG* variables".equals(settings.source())) {
      return false;
    }
    for (String name : SERVER_VARIABLES) {
      String v = env.get(name);
      if (v != null && !v.isBlank()) {
        return false;
      }
    }
    return true;
  }

  /**
   * Where the demo runs: {@code settings} when they were configured or answer; else an embedded server,
   * started here (the caller closes it; {@code started[0]} receives it). {@code forced}: start one
   * whatever is configured ({@code --embedded}).
   *
   * @throws CliException {@link ExitCodes#CANNOT_CONNECT} when the configured server does not answer,
   *     or when no server answers and the embedded one cannot start (with the reason and what to do)
   */
  static ConnectionSettings choose(ConnectionSettings settings, Map<String, String> env, boolean forced,
      EmbeddedPostgres[] started, java.io.PrintWriter out) {
    String why;
    if (forced) {
      why = "--embedded";
    } else {
      try {
        settings.checkReachable("pgtask demo");
        return settings;
      } catch (CliException unreachable) {
        if (!nothingConfigured(settings, env)) {
          throw new CliException(unreachable.exitCode(), unreachable.getMessage()
              + "; or run the demo on an embedded PostgreSQL it starts and deletes: pgtask demo --embedded",
              unreachable.getCause());
        }
        why = "no server configured (--url, PGTASK_URL, PG* variables) and none answers on " + settings.describe();
      }
    }
    EmbeddedPostgres pg;
    try {
      pg = EmbeddedPostgres.start();
    } catch (IOException | RuntimeException e) {
      throw new CliException(ExitCodes.CANNOT_CONNECT, why + "; the embedded PostgreSQL could not start: "
          + Main.oneLine(String.valueOf(e.getMessage())), e);
    }
    started[0] = pg;
    out.println("pgtask demo: " + why + ": started " + pg.describe() + "; stopped and deleted when the demo ends");
    out.flush();
    return new ConnectionSettings(pg.jdbcUrl("postgres") + "?user=" + EmbeddedPostgres.SUPERUSER,
        EmbeddedPostgres.SUPERUSER, null, "embedded PostgreSQL");
  }
}
