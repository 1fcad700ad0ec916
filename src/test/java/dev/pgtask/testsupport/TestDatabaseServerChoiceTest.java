package dev.pgtask.testsupport;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Which server the suite uses (the order of {@link TestDatabase}'s class comment): an explicit URL,
 * else a server answering on the libpq variables, else Testcontainers, else an embedded PostgreSQL
 * the suite starts itself; a URL's user and password never stay in the URLs the tests connect with.
 */
class TestDatabaseServerChoiceTest {

  static TestDatabase db;
  static int closedPort;

  @BeforeAll
  static void setUp() throws Exception {
    db = TestDatabase.create("server_choice", false);
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      closedPort = s.getLocalPort();
    }
  }

  @AfterAll
  static void tearDown() {
    db.close();
  }

  static UnaryOperator<String> props(Map<String, String> values) {
    return key -> values.containsKey(key) ? values.get(key) : "user.name".equals(key) ? "someone" : null;
  }

  /** host:port of the suite's own server. */
  static String[] hostPort() {
    String hp = db.url().replaceAll("^jdbc:postgresql://([^/]+)/.*$", "$1");
    return hp.split(":");
  }

  @Test
  void anExplicitUrlWinsAndItsCredentialsStayOutOfTheUrl() {
    TestDatabase.Server s = TestDatabase.Server.find(
        props(Map.of("pgtask.test.url", "jdbc:postgresql://db.example:6543/admin?user=boss&password=pw&sslmode=disable")),
        Map.of("PGHOST", hostPort()[0], "PGPORT", hostPort()[1]), () -> null);
    assertThat(s.baseUrl).isEqualTo("jdbc:postgresql://db.example:6543/");
    assertThat(s.adminDb).isEqualTo("admin");
    assertThat(s.user).isEqualTo("boss");
    assertThat(s.password).isEqualTo("pw");
    assertThat(s.urlFor("x")).as("the URL a role connects with").isEqualTo("jdbc:postgresql://db.example:6543/x?sslmode=disable");
    assertThat(s.embedded).isNull();
  }

  @Test
  void aServerAnsweringOnTheLibpqVariablesIsNext() {
    Map<String, String> env = new HashMap<>(Map.of("PGHOST", hostPort()[0], "PGPORT", hostPort()[1], "PGUSER", db.user()));
    if (db.password() != null) {
      env.put("PGPASSWORD", db.password());
    }
    TestDatabase.Server s = TestDatabase.Server.find(props(Map.of()), env, () -> {
      throw new AssertionError("Testcontainers asked although a server answers");
    });
    assertThat(s.baseUrl).isEqualTo("jdbc:postgresql://" + hostPort()[0] + ":" + hostPort()[1] + "/");
    assertThat(s.embedded).isNull();
  }

  @Test
  void withNoUrlNothingAnsweringAndNoDockerTheSuiteStartsAnEmbeddedServer() throws Exception {
    boolean[] dockerAsked = {false};
    TestDatabase.Server s = TestDatabase.Server.find(props(Map.of()),
        Map.of("PGHOST", "127.0.0.1", "PGPORT", String.valueOf(closedPort)), () -> {
          dockerAsked[0] = true;
          return null;
        });
    assertThat(dockerAsked[0]).as("Testcontainers tried before the embedded server").isTrue();
    assertThat(s.embedded).as("an embedded server").isNotNull();
    Path dir = s.embedded.directory();
    try {
      Properties p = new Properties();
      p.setProperty("user", s.user);
      try (Connection c = DriverManager.getConnection(s.urlFor(s.adminDb), p);
          ResultSet rs = c.createStatement().executeQuery("SELECT current_setting('data_directory')")) {
        rs.next();
        assertThat(Path.of(rs.getString(1))).startsWith(dir);
      }
    } finally {
      s.embedded.close();
    }
    assertThat(Files.exists(dir)).as("scratch directory deleted").isFalse();
  }
}
