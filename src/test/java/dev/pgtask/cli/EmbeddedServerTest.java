package dev.pgtask.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgtask.internal.embedded.EmbeddedPostgres;
import dev.pgtask.testsupport.TestDatabase;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Where {@code pgtask demo} runs: a server the user configured always wins (even one that does not
 * answer: then the demo says why and stops); with nothing configured, a server answering on libpq's
 * defaults; else a real embedded PostgreSQL that the demo starts, announces in one line and stops.
 */
class EmbeddedServerTest {

  static TestDatabase db;
  static int closedPort;

  @BeforeAll
  static void setUp() throws Exception {
    db = TestDatabase.create("embedded_choice");
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      closedPort = s.getLocalPort();
    }
  }

  @AfterAll
  static void tearDown() {
    db.close();
  }

  /** Settings as libpq's defaults produce them (source "PG* variables"), on {@code port}. */
  static ConnectionSettings defaultsOn(int port) {
    return new ConnectionSettings("jdbc:postgresql://127.0.0.1:" + port + "/postgres", EmbeddedPostgres.SUPERUSER,
        null, "PG* variables");
  }

  @Test
  void aConfiguredUrlWinsEvenWhenItDoesNotAnswer() {
    ConnectionSettings url = ConnectionSettings.resolve("jdbc:postgresql://127.0.0.1:" + closedPort + "/x",
        Map.of(), "someone");
    EmbeddedPostgres[] started = new EmbeddedPostgres[1];
    assertThatThrownBy(() -> EmbeddedServer.choose(url, Map.of(), false, started, new PrintWriter(new StringWriter())))
        .isInstanceOfSatisfying(CliException.class, e -> assertThat(e.exitCode()).isEqualTo(ExitCodes.CANNOT_CONNECT))
        .hasMessageContaining("127.0.0.1:" + closedPort).hasMessageContaining("--url");
    assertThat(started[0]).as("no embedded server for a configured URL").isNull();
  }

  @Test
  void libpqVariablesWinEvenWhenTheirServerDoesNotAnswer() {
    Map<String, String> env = Map.of("PGHOST", "127.0.0.1", "PGPORT", String.valueOf(closedPort));
    ConnectionSettings fromEnv = ConnectionSettings.resolve(null, env, "someone");
    EmbeddedPostgres[] started = new EmbeddedPostgres[1];
    assertThatThrownBy(() -> EmbeddedServer.choose(fromEnv, env, false, started, new PrintWriter(new StringWriter())))
        .isInstanceOf(CliException.class).hasMessageContaining(String.valueOf(closedPort));
    assertThat(started[0]).as("no embedded server when PGHOST/PGPORT chose a server").isNull();
    assertThat(EmbeddedServer.nothingConfigured(ConnectionSettings.resolve(null, Map.of("PGUSER", "u"), "o"),
        Map.of("PGUSER", "u"))).as("PGUSER alone is a configured server").isFalse();
  }

  @Test
  void aServerAnsweringOnTheDefaultsWins() throws Exception {
    int port = Integer.parseInt(db.url().replaceAll("^jdbc:postgresql://[^:/]+:(\\d+)/.*$", "$1"));
    ConnectionSettings answering = new ConnectionSettings(db.url(), db.user(), db.password(), "PG* variables");
    EmbeddedPostgres[] started = new EmbeddedPostgres[1];
    ConnectionSettings chosen = EmbeddedServer.choose(answering, Map.of(), false, started,
        new PrintWriter(new StringWriter()));
    assertThat(chosen).isSameAs(answering);
    assertThat(started[0]).as("no embedded server while one answers on port %s", port).isNull();
  }

  @Test
  void withNothingConfiguredAndNothingAnsweringTheDemoStartsAnEmbeddedServerAndStopsIt() throws Exception {
    StringWriter printed = new StringWriter();
    EmbeddedPostgres[] started = new EmbeddedPostgres[1];
    ConnectionSettings chosen = EmbeddedServer.choose(defaultsOn(closedPort), Map.of(), false, started,
        new PrintWriter(printed));
    EmbeddedPostgres pg = started[0];
    assertThat(pg).as("an embedded server was started").isNotNull();
    Path dir = pg.directory();
    try {
      assertThat(printed.toString().strip()).as("one line saying so")
          .doesNotContain("\n")
          .contains("none answers on jdbc:postgresql://127.0.0.1:" + closedPort)
          .contains("started embedded PostgreSQL " + pg.version() + " on 127.0.0.1:" + pg.port())
          .contains("stopped and deleted when the demo ends");
      assertThat(chosen.source()).isEqualTo("embedded PostgreSQL");
      Properties p = chosen.driverProperties();
      try (Connection c = DriverManager.getConnection(chosen.jdbcUrl(), p);
          ResultSet rs = c.createStatement().executeQuery("SELECT current_setting('data_directory')")) {
        rs.next();
        assertThat(Path.of(rs.getString(1))).as("a real server on the scratch data directory").startsWith(dir);
      }
    } finally {
      pg.close();
    }
    assertThat(Files.exists(dir)).as("scratch directory deleted at close").isFalse();
    assertThatThrownBy(() -> DriverManager.getConnection(chosen.jdbcUrl(), chosen.driverProperties()))
        .as("the server is stopped").hasMessageContaining("refused");
  }
}
