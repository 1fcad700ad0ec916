package dev.pgtask.cli.bench;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A PgBouncer of {@code bench --scale}'s own: the installed {@code pgbouncer} binary on a free local
 * port, in transaction mode, in front of one database, with at most {@value #POOL_SIZE} server
 * connections (the setup of docs/benchmarks.md, "Sixty-four workers"). PgBouncer refuses to run as
 * root, so as root it runs as {@code nobody}. {@link #close()} stops it and removes its directory.
 */
final class PrivatePgBouncer implements AutoCloseable {

  /** PgBouncer's server connections (default_pool_size = max_db_connections). */
  static final int POOL_SIZE = 20;

  private final Process process;
  private final Path dir;
  private final int port;

  private PrivatePgBouncer(Process process, Path dir, int port) {
    this.process = process;
    this.dir = dir;
    this.port = port;
  }

  /** The pgbouncer binary, or {@code null} when none is installed. */
  static Path binary() {
    List<Path> candidates = new ArrayList<>(List.of(Path.of("/usr/sbin/pgbouncer"), Path.of("/usr/bin/pgbouncer"),
        Path.of("/usr/local/bin/pgbouncer")));
    String path = System.getenv("PATH");
    if (path != null) {
      for (String d : path.split(":")) {
        if (!d.isEmpty()) {
          candidates.add(Path.of(d, "pgbouncer"));
        }
      }
    }
    return candidates.stream().filter(Files::isExecutable).findFirst().orElse(null);
  }

  /** Starts {@code binary} in front of {@code database} on {@code host}:{@code port}, for {@code user}. */
  static PrivatePgBouncer start(Path binary, String host, int serverPort, String database, String user, String password)
      throws IOException, InterruptedException {
    Path dir = Files.createTempDirectory("pgtask-bench-pgbouncer-");
    boolean root = "root".equals(System.getProperty("user.name"));
    if (root) {
      Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
    }
    Files.writeString(dir.resolve("users.txt"), quote(user) + " " + quote(password == null ? "" : password) + "\n");
    for (int attempt = 0; ; attempt++) {
      int port = freePort();
      String ini = "[databases]\n"
          + database + " = host=" + host + " port=" + serverPort + " dbname=" + database + "\n"
          + "\n[pgbouncer]\n"
          + "listen_addr = 127.0.0.1\nlisten_port = " + port + "\nunix_socket_dir =\n"
          + "auth_type = trust\nauth_file = " + dir.resolve("users.txt") + "\n"
          + "pool_mode = transaction\n"
          + "default_pool_size = " + POOL_SIZE + "\nmax_db_connections = " + POOL_SIZE + "\n"
          + "min_pool_size = 0\nreserve_pool_size = 0\nmax_client_conn = 2000\n"
          + "ignore_startup_parameters = extra_float_digits,options\n"
          + "logfile = " + dir.resolve("pgbouncer.log") + "\npidfile = " + dir.resolve("pgbouncer.pid") + "\n";
      Files.writeString(dir.resolve("pgbouncer.ini"), ini);
      List<String> cmd = new ArrayList<>();
      if (root) {
        // the directory becomes nobody's: PgBouncer reads its files and writes its log there
        chown(dir, "nobody");
        cmd.addAll(List.of("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"));
      }
      cmd.add(binary.toString());
      cmd.add(dir.resolve("pgbouncer.ini").toString());
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(dir.resolve("pgbouncer.out").toFile())
          .start();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (p.isAlive() && !accepts(port) && System.nanoTime() < deadline) {
        Thread.sleep(20); // polling a port for a process that signals nothing else
      }
      if (p.isAlive() && accepts(port)) {
        return new PrivatePgBouncer(p, dir, port);
      }
      p.destroyForcibly();
      p.waitFor(5, TimeUnit.SECONDS);
      if (attempt == 2) {
        String log = readQuietly(dir.resolve("pgbouncer.out")) + readQuietly(dir.resolve("pgbouncer.log"));
        deleteQuietly(dir);
        throw new IOException("pgbouncer did not start: " + log.strip());
      }
    }
  }

  /** {@code 127.0.0.1:<port>}. */
  String address() {
    return "127.0.0.1:" + port;
  }

  /** The PgBouncer process's id (setpriv execs it: the same process). */
  long pid() {
    return process.pid();
  }

  @Override
  public void close() {
    process.destroy();
    try {
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        process.waitFor(5, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    deleteQuietly(dir);
  }

  private static String quote(String s) {
    return "\"" + s.replace("\"", "\"\"") + "\"";
  }

  private static void chown(Path dir, String user) throws IOException {
    var owner = dir.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName(user);
    try (Stream<Path> files = Files.walk(dir)) {
      for (Path f : files.toList()) {
        Files.setOwner(f, owner);
      }
    }
  }

  private static boolean accepts(int port) {
    try (Socket s = new Socket("127.0.0.1", port)) {
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  private static String readQuietly(Path f) {
    try {
      return Files.readString(f);
    } catch (IOException e) {
      return "";
    }
  }

  private static void deleteQuietly(Path dir) {
    try (Stream<Path> files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
    } catch (IOException e) {
      // a temporary directory: left behind
    }
  }

  @Override
  public String toString() {
    return String.format(Locale.ROOT, "PgBouncer (transaction mode, %d server connections) on %s", POOL_SIZE, address());
  }
}
