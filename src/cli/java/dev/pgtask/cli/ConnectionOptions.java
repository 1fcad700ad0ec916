package dev.pgtask.cli;

import picocli.CommandLine.Option;

/** The {@code --url} option shared by every command that talks to the database (a picocli mixin). */
public final class ConnectionOptions {

  @Option(names = "--url", paramLabel = "JDBC_URL",
      description = "Database URL: jdbc:postgresql://HOST:PORT/DB[?user=U&password=P] or postgresql://U:P@HOST:PORT/DB."
          + " Default: PGTASK_URL, else the libpq variables PGHOST PGPORT PGDATABASE PGUSER PGPASSWORD."
          + " A command line is visible to every user (ps): prefer PGPASSWORD or PGTASK_URL for a password.")
  String url;

  /** The resolved connection settings. */
  public ConnectionSettings settings() {
    return ConnectionSettings.resolve(url);
  }
}
