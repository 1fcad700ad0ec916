package dev.pgtask.migrate;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgtask.testsupport.TestDatabase;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** pgtask's migrations: idempotent, and kept apart from the host application's own Flyway history. */
class MigrationsTest {

  private static TestDatabase db;

  @BeforeAll
  static void createDatabase() {
    db = TestDatabase.create("migrations", false);
  }

  @AfterAll
  static void dropDatabase() {
    db.close();
  }

  @Test
  void aFirstMigrationLogsNoDoesNotExistSkippingNotices() {
    // slf4j-simple, the suite's binding, writes to the System.err of the moment
    ByteArrayOutputStream log = new ByteArrayOutputStream();
    PrintStream err = System.err;
    try (TestDatabase fresh = TestDatabase.create("migrations_quiet", false)) {
      System.setErr(new PrintStream(log, true, StandardCharsets.UTF_8));
      try {
        Migrations.apply(fresh.dataSource());
      } finally {
        System.setErr(err);
      }
    }
    String text = log.toString(StandardCharsets.UTF_8);
    assertThat(text).as("Flyway's log of a first migration").contains("Successfully applied")
        .doesNotContain("does not exist, skipping");
  }

  @Test
  void applyingTwiceIsCleanAndTheSecondCallAppliesNothing() throws Exception {
    try (TestDatabase fresh = TestDatabase.create("migrations_twice", false)) {
      assertThat(Migrations.currentVersion(fresh.dataSource())).as("version of a database never migrated").isNull();
      int first = Migrations.apply(fresh.dataSource());
      int second = Migrations.apply(fresh.dataSource());
      assertThat(first).as("migrations applied to a fresh database (versioned and repeatable)")
          .isEqualTo(migrationFiles().size() + repeatableFiles().size());
      assertThat(second).as("migrations applied by the second call").isZero();
      assertThat(Migrations.currentVersion(fresh.dataSource())).as("schema version after migrating")
          .isEqualTo(latestVersion());
      try (Connection c = fresh.connect()) {
        assertThat(strings(c, "SELECT version || ':' || success FROM pgtask.pgtask_schema_history WHERE version IS NOT NULL ORDER BY installed_rank"))
            .as("pgtask's history rows").hasSize(migrationFiles().size()).allMatch(s -> s.endsWith(":true"));
        assertThat(strings(c, "SELECT to_regclass('public.flyway_schema_history')::text"))
            .as("a Flyway history table in public, created by pgtask").containsExactly((String) null);
      }
    }
  }

  @Test
  void theApplicationsOwnFlywayHistoryInPublicIsUntouched(@TempDir Path appMigrations) throws Exception {
    Files.writeString(appMigrations.resolve("V1__app_orders.sql"), "CREATE TABLE public.orders (id bigint PRIMARY KEY);");
    Flyway app = Flyway.configure().dataSource(db.dataSource()).locations("filesystem:" + appMigrations).load();
    assertThat(app.migrate().migrationsExecuted).as("the application's first migration").isEqualTo(1);
    List<String> appHistoryBefore;
    try (Connection c = db.connect()) {
      appHistoryBefore = appHistory(c);
    }

    assertThat(Migrations.apply(db.dataSource())).as("pgtask migrations applied next to the application's")
        .isEqualTo(migrationFiles().size() + repeatableFiles().size());

    try (Connection c = db.connect()) {
      assertThat(appHistory(c)).as("the application's flyway_schema_history after pgtask migrated")
          .isEqualTo(appHistoryBefore);
      assertThat(strings(c, "SELECT count(*)::text FROM pgtask.pgtask_schema_history WHERE version IS NOT NULL"))
          .as("pgtask's own history rows").containsExactly(String.valueOf(migrationFiles().size()));
    }

    // the application keeps migrating as before (Flyway validates its applied migrations first)
    Files.writeString(appMigrations.resolve("V2__app_customers.sql"), "CREATE TABLE public.customers (id bigint PRIMARY KEY);");
    assertThat(app.migrate().migrationsExecuted).as("the application's next migration").isEqualTo(1);
    assertThat(Migrations.apply(db.dataSource())).as("pgtask migrations applied again").isZero();
    try (Connection c = db.connect()) {
      assertThat(appHistory(c)).as("the application's history versions").extracting(s -> s.split(":")[0])
          .containsExactly("1", "2");
    }
  }

  private static List<String> appHistory(Connection c) throws SQLException {
    return strings(c, "SELECT version || ':' || description || ':' || script || ':' || checksum || ':' || success "
        + "FROM public.flyway_schema_history ORDER BY installed_rank");
  }

  private static List<Path> migrationFiles() throws Exception {
    try (Stream<Path> files = Files.list(Path.of("db"))) {
      return files.filter(p -> p.getFileName().toString().matches("V\\d+__.*\\.sql")).toList();
    }
  }

  private static List<Path> repeatableFiles() throws Exception {
    try (Stream<Path> files = Files.list(Path.of("db"))) {
      return files.filter(p -> p.getFileName().toString().matches("R__.*\\.sql")).toList();
    }
  }

  private static String latestVersion() throws Exception {
    return migrationFiles().stream()
        .map(p -> p.getFileName().toString().replaceFirst("^V(\\d+)__.*$", "$1"))
        .max((a, b) -> Integer.compare(Integer.parseInt(a), Integer.parseInt(b)))
        .orElseThrow();
  }

  private static List<String> strings(Connection c, String sql) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql); ResultSet rs = ps.executeQuery()) {
      List<String> out = new ArrayList<>();
      while (rs.next()) {
        out.add(rs.getString(1));
      }
      return out;
    }
  }
}
