package dev.pgtask.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import org.junit.jupiter.api.Test;

class ConnectionSettingsTest {

  private static final Map<String, String> NO_ENV = Map.of();

  private static ConnectionSettings resolve(String url, Map<String, String> env) {
    return ConnectionSettings.resolve(url, env, "osuser");
  }

  @Test
  void withNothingSetUsesTheLibpqDefaults() {
    ConnectionSettings s = resolve(null, NO_ENV);
    assertThat(s.jdbcUrl()).isEqualTo("jdbc:postgresql://localhost:5432/osuser");
    assertThat(s.user()).isEqualTo("osuser");
    assertThat(s.password()).isNull();
    assertThat(s.source()).isEqualTo("PG* variables");
  }

  @Test
  void readsTheLibpqVariables() {
    ConnectionSettings s = resolve(null, Map.of("PGHOST", "db.example", "PGPORT", "6543", "PGDATABASE", "shop",
        "PGUSER", "alice", "PGPASSWORD", "s3cret", "PGSSLMODE", "require"));
    assertThat(s.jdbcUrl()).isEqualTo("jdbc:postgresql://db.example:6543/shop?sslmode=require");
    assertThat(s.user()).isEqualTo("alice");
    assertThat(s.password()).isEqualTo("s3cret");
    assertThat(s.driverProperties()).containsEntry("user", "alice").containsEntry("password", "s3cret");
  }

  @Test
  void theDatabaseDefaultsToTheUserLikeLibpq() {
    assertThat(resolve(null, Map.of("PGUSER", "bob")).jdbcUrl()).isEqualTo("jdbc:postgresql://localhost:5432/bob");
  }

  @Test
  void aSocketDirectoryInPghostBecomesLocalhost() {
    assertThat(resolve(null, Map.of("PGHOST", "/var/run/postgresql")).jdbcUrl())
        .startsWith("jdbc:postgresql://localhost:5432/");
  }

  @Test
  void severalHostsGetTheirPortsOrTheOnePort() {
    assertThat(resolve(null, Map.of("PGHOST", "a,b", "PGPORT", "5433")).jdbcUrl())
        .startsWith("jdbc:postgresql://a:5433,b:5433/");
    assertThat(resolve(null, Map.of("PGHOST", "a,b", "PGPORT", "1,2")).jdbcUrl())
        .startsWith("jdbc:postgresql://a:1,b:2/");
    assertThatThrownBy(() -> resolve(null, Map.of("PGHOST", "a,b,c", "PGPORT", "1,2")))
        .isInstanceOf(CliException.class)
        .hasMessageContaining("3 hosts but 2 ports");
  }

  @Test
  void anIpv6HostIsBracketed() {
    assertThat(resolve(null, Map.of("PGHOST", "::1")).jdbcUrl()).startsWith("jdbc:postgresql://[::1]:5432/");
  }

  @Test
  void theUrlOptionWinsOverPgtaskUrlWhichWinsOverLibpq() {
    Map<String, String> env = Map.of("PGTASK_URL", "jdbc:postgresql://fromenv/db", "PGHOST", "libpq");
    assertThat(resolve("jdbc:postgresql://fromoption/db", env).jdbcUrl()).isEqualTo("jdbc:postgresql://fromoption/db");
    assertThat(resolve("jdbc:postgresql://fromoption/db", env).source()).isEqualTo("--url");
    assertThat(resolve(null, env).jdbcUrl()).isEqualTo("jdbc:postgresql://fromenv/db");
    assertThat(resolve(null, env).source()).isEqualTo("PGTASK_URL");
    assertThat(resolve("  ", env).source()).isEqualTo("PGTASK_URL");
  }

  @Test
  void aJdbcUrlIsKeptAsGivenWithItsOwnCredentials() {
    ConnectionSettings s = resolve("jdbc:postgresql://h:5433/db?user=carol&password=pw",
        Map.of("PGUSER", "ignored", "PGPASSWORD", "ignored"));
    assertThat(s.jdbcUrl()).isEqualTo("jdbc:postgresql://h:5433/db?user=carol&password=pw");
    assertThat(s.user()).isEqualTo("carol");
    assertThat(s.password()).isNull();
    assertThat(s.describe()).isEqualTo("jdbc:postgresql://h:5433/db as carol").doesNotContain("pw");
    assertThat(s.toString()).doesNotContain("pw");
  }

  @Test
  void aJdbcUrlWithoutCredentialsGetsThemFromTheLibpqVariables() {
    ConnectionSettings s = resolve("jdbc:postgresql://h/db", Map.of("PGUSER", "dave", "PGPASSWORD", "pw"));
    assertThat(s.user()).isEqualTo("dave");
    assertThat(s.password()).isEqualTo("pw");
    assertThat(resolve("jdbc:postgresql://h/db", NO_ENV).user()).isEqualTo("osuser");
  }

  @Test
  void convertsAPostgresUri() {
    ConnectionSettings s = resolve("postgresql://erin:p%40ss@db.example:6000/my%20db?sslmode=require&application_name=x",
        NO_ENV);
    assertThat(s.jdbcUrl()).isEqualTo("jdbc:postgresql://db.example:6000/my%20db?sslmode=require&ApplicationName=x");
    assertThat(s.user()).isEqualTo("erin");
    assertThat(s.password()).isEqualTo("p@ss");
    assertThat(s.describe()).doesNotContain("p@ss");
  }

  @Test
  void convertsTheShortSchemeAndFillsGapsFromTheEnvironment() {
    ConnectionSettings s = resolve("postgres://", Map.of("PGHOST", "envhost", "PGUSER", "frank"));
    assertThat(s.jdbcUrl()).isEqualTo("jdbc:postgresql://envhost:5432/frank");
    assertThat(s.user()).isEqualTo("frank");
    assertThat(resolve("postgres:///shop", NO_ENV).jdbcUrl()).isEqualTo("jdbc:postgresql://localhost:5432/shop");
    assertThat(resolve("postgres://h/shop", Map.of("PGPORT", "7000")).jdbcUrl())
        .isEqualTo("jdbc:postgresql://h:7000/shop");
  }

  @Test
  void convertsUriQueryParametersThatLibpqAccepts() {
    ConnectionSettings s = resolve("postgresql:///?host=qh&port=7&dbname=qd&user=qu&password=qp&connect_timeout=3"
        + "&target_session_attrs=read-write", NO_ENV);
    assertThat(s.jdbcUrl()).isEqualTo("jdbc:postgresql://qh:7/qd?connectTimeout=3&targetServerType=primary");
    assertThat(s.user()).isEqualTo("qu");
    assertThat(s.password()).isEqualTo("qp");
  }

  @Test
  void convertsUriHostListsAndIpv6() {
    assertThat(resolve("postgresql://u@a:1,b:2/d", NO_ENV).jdbcUrl()).isEqualTo("jdbc:postgresql://a:1,b:2/d");
    assertThat(resolve("postgresql://[::1]:5433/d", NO_ENV).jdbcUrl()).isEqualTo("jdbc:postgresql://[::1]:5433/d");
    assertThat(resolve("postgresql://[::1]/d", NO_ENV).jdbcUrl()).isEqualTo("jdbc:postgresql://[::1]:5432/d");
  }

  @Test
  void rejectsWhatIsNotAPostgresUrlWithAUsageErrorThatHidesThePassword() {
    assertThatThrownBy(() -> resolve("mysql://u:secret@h/db", NO_ENV))
        .isInstanceOfSatisfying(CliException.class, e -> assertThat(e.exitCode()).isEqualTo(ExitCodes.USAGE))
        .hasMessageContaining("is not a PostgreSQL URL")
        .hasMessageNotContaining("secret");
    assertThatThrownBy(() -> resolve("postgresql://h:port/db", NO_ENV))
        .isInstanceOf(CliException.class)
        .hasMessageContaining("port 'port' is not a number");
  }

  @Test
  void aConnectionFailureMessageNeverShowsThePasswordOfTheUrl() {
    // pgjdbc quotes a URL it cannot parse in full, password included
    CliRun run = CliRun.of("migrate", "--url", "jdbc:postgresql://127.0.0.1:99999/db?user=x&password=Hunter2-url");
    assertThat(run.exitCode()).isEqualTo(ExitCodes.CANNOT_CONNECT);
    assertThat(run.err()).as("the error printed").contains("cannot connect to jdbc:postgresql://127.0.0.1:99999/db")
        .doesNotContain("Hunter2-url");

    ConnectionSettings s = resolve("jdbc:postgresql://127.0.0.1:99999/db?password=Hunter2-url", NO_ENV);
    CliException e = s.cannotConnect(new java.sql.SQLException("Unable to parse URL " + s.jdbcUrl(), "08001"));
    assertThat(e).hasMessageNotContaining("Hunter2-url");
    assertThat(e.getCause()).as("the cause kept for --verbose").hasMessageNotContaining("Hunter2-url");
  }

  @Test
  void aConnectionFailureMessageNeverShowsAPasswordGivenApartFromTheUrl() {
    ConnectionSettings s = resolve("postgresql://alice:Hunter2-uri@127.0.0.1:1/db", Map.of());
    CliException e = s.cannotConnect(new java.sql.SQLException("driver says: Hunter2-uri was rejected", "28P01"));
    assertThat(e).hasMessageNotContaining("Hunter2-uri").hasMessageContaining("driver says: *** was rejected");
    assertThat(s.toString()).doesNotContain("Hunter2-uri");
  }
}
