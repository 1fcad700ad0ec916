package dev.pgtask.cli;

import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.migrate.Migrations;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** {@code pgtask migrate}: creates or upgrades the pgtask schema. Idempotent; safe to run concurrently. */
@Command(name = "migrate", mixinStandardHelpOptions = true,
    description = "Create or upgrade the pgtask schema (idempotent; concurrent runs are serialized).")
public final class MigrateCommand implements Callable<Integer> {

  @Mixin
  ConnectionOptions connection;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() {
    ConnectionSettings settings = connection.settings();
    settings.checkReachable("pgtask migrate");
    settings = settings.forPooler("pgtask migrate");
    try (HikariDataSource pool = settings.openPool("pgtask-migrate", 2, "pgtask migrate")) {
      int applied = Migrations.apply(pool);
      String version = Migrations.currentVersion(pool);
      spec.commandLine().getOut().printf("pgtask schema at version %s (%d migration%s applied) in %s%n",
          version, applied, applied == 1 ? "" : "s", settings.describe());
      spec.commandLine().getOut().flush();
    }
    return ExitCodes.OK;
  }
}
