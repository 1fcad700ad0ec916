package dev.pgtask.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgtask.migrate.Migrations;
import dev.pgtask.testsupport.TestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class MigrateCommandTest {

  private static TestDatabase db;

  @BeforeAll
  static void freshUnmigratedDatabase() {
    db = TestDatabase.create("migrate_command", false);
  }

  @AfterAll
  static void drop() {
    db.close();
  }

  @Test
  void migratesAFreshDatabaseAndIsIdempotent() {
    assertThat(Migrations.currentVersion(db.dataSource())).as("version before migrate").isNull();

    CliRun first = CliRun.of("migrate", "--url", db.fullUrl());
    assertThat(first.exitCode()).as("first migrate exit code; stderr: %s", first.err()).isEqualTo(ExitCodes.OK);
    assertThat(Migrations.currentVersion(db.dataSource())).as("version after migrate").isNotNull();
    assertThat(first.out()).contains("pgtask schema at version").doesNotContain(" 0 migrations applied");

    CliRun second = CliRun.of("migrate", "--url", db.fullUrl());
    assertThat(second.exitCode()).as("second migrate exit code; stderr: %s", second.err()).isEqualTo(ExitCodes.OK);
    assertThat(second.out()).contains("(0 migrations applied)");
  }

  @Test
  void anUnreachableServerExitsThreeWithOneReadableLine() {
    CliRun run = CliRun.of("migrate", "--url", "jdbc:postgresql://127.0.0.1:1/nowhere?user=x&password=hidden");
    assertThat(run.exitCode()).isEqualTo(ExitCodes.CANNOT_CONNECT);
    assertThat(run.errLines()).singleElement().asString()
        .startsWith("pgtask migrate: cannot connect to jdbc:postgresql://127.0.0.1:1/nowhere as x")
        .contains("--url")
        .doesNotContain("hidden")
        .doesNotContain("Exception");
  }

  @Test
  void aMissingDatabaseExitsThree() {
    String url = db.fullUrl().replace("/" + db.name(), "/" + db.name() + "_missing");
    CliRun run = CliRun.of("migrate", "--url", url);
    assertThat(run.exitCode()).isEqualTo(ExitCodes.CANNOT_CONNECT);
    assertThat(run.errLines()).singleElement().asString().contains("does not exist");
  }

  @Test
  void aUrlThatIsNotPostgresIsAUsageError() {
    CliRun run = CliRun.of("migrate", "--url", "mysql://localhost/db");
    assertThat(run.exitCode()).isEqualTo(ExitCodes.USAGE);
    assertThat(run.errLines()).singleElement().asString().contains("is not a PostgreSQL URL");
  }

  @Test
  void anUnknownOptionIsAUsageErrorOnOneLine() {
    CliRun run = CliRun.of("migrate", "--nope");
    assertThat(run.exitCode()).isEqualTo(ExitCodes.USAGE);
    assertThat(run.errLines()).singleElement().asString()
        .startsWith("pgtask migrate: Unknown option: '--nope'")
        .contains("pgtask migrate --help");
  }

  @Test
  void verboseAddsTheStackTrace() {
    CliRun run = CliRun.of("migrate", "--verbose", "--url", "jdbc:postgresql://127.0.0.1:1/nowhere");
    assertThat(run.exitCode()).isEqualTo(ExitCodes.CANNOT_CONNECT);
    assertThat(run.err()).contains("cannot connect").contains("\tat ");
  }
}
