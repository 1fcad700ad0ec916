package dev.pgtask.cli.bench;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The worker processes of one {@code bench --scale} configuration ({@link ScaleWorkerHost}), started
 * from this JVM's own class path, and their line protocol: wait for {@code ready}, ask for
 * {@code stats}, {@code stop}. Each process's log (stderr) goes to a file in a temporary directory,
 * quoted when a process fails.
 */
final class ScaleHosts implements AutoCloseable {

  /** JVM options of a worker process: small heap, the C1 compiler only, the serial collector. */
  static final List<String> JVM_OPTIONS = List.of("-Xmx64m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
      "-Xss512k");

  private final List<Host> hosts = new ArrayList<>();
  private final Path logs;

  private record Host(Process process, BufferedWriter in, BlockingQueue<String> out, Path log) {}

  private ScaleHosts(Path logs) {
    this.logs = logs;
  }

  /**
   * Starts {@code processes} worker processes of {@code perProcess} workers each (concurrency and
   * pool size as given); the workers' ids start with {@code label}.
   */
  static ScaleHosts start(int processes, int perProcess, int concurrency, int poolSize, String poolUrl, String listenUrl,
      String user, String password, String label) throws IOException {
    ScaleHosts hosts = new ScaleHosts(Files.createTempDirectory("pgtask-bench-scale-"));
    try {
      String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
      for (int h = 0; h < processes; h++) {
        List<String> cmd = new ArrayList<>();
        cmd.add(java);
        cmd.addAll(JVM_OPTIONS);
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), ScaleWorkerHost.class.getName(), poolUrl,
            listenUrl, label + "-p" + h, Integer.toString(perProcess), Integer.toString(concurrency),
            Integer.toString(poolSize)));
        Path log = hosts.logs.resolve("host" + h + ".log");
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(log.toFile());
        if (user != null) {
          pb.environment().put(ScaleWorkerHost.USER_ENV, user);
        }
        if (password != null) {
          pb.environment().put(ScaleWorkerHost.PASSWORD_ENV, password);
        }
        Process p = pb.start();
        BlockingQueue<String> out = new LinkedBlockingQueue<>();
        Thread reader = new Thread(() -> {
          try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line = r.readLine(); line != null; line = r.readLine()) {
              out.add(line);
            }
          } catch (IOException e) {
            // the process ended
          }
        }, "pgtask-bench-scale-host" + h);
        reader.setDaemon(true);
        reader.start();
        hosts.hosts.add(new Host(p, new BufferedWriter(new OutputStreamWriter(p.getOutputStream(), StandardCharsets.UTF_8)),
            out, log));
      }
      return hosts;
    } catch (IOException | RuntimeException e) {
      hosts.close();
      throw e;
    }
  }

  /** Waits until every process printed {@code ready}; throws with the log of one that did not. */
  void awaitReady(long timeoutMillis) throws IOException, InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
    for (int h = 0; h < hosts.size(); h++) {
      Host host = hosts.get(h);
      String line = nextLine(host, deadline);
      if (!"ready".equals(line)) {
        throw new IOException("worker process " + h + " did not start (" + (line == null ? "no answer" : line) + "):\n"
            + tail(host.log()));
      }
    }
  }

  /** The sum of {claimed, claim statements, LISTENing sessions} over every worker of every process. */
  long[] stats() throws IOException, InterruptedException {
    for (Host host : hosts) {
      send(host, "stats");
    }
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    long[] sum = new long[3];
    for (Host host : hosts) {
      String line = nextLine(host, deadline);
      if (line == null || !line.startsWith("stats ")) {
        throw new IOException("a worker process did not answer 'stats' (" + line + "):\n" + tail(host.log()));
      }
      String[] f = line.split(" ");
      sum[0] += Long.parseLong(f[1]);
      sum[1] += Long.parseLong(f[2]);
      sum[2] += Long.parseLong(f[3]);
    }
    return sum;
  }

  /** The processes' ids, for their CPU time. */
  List<Long> pids() {
    return hosts.stream().map(h -> h.process().pid()).toList();
  }

  /** Stops every process (each closes its workers), forcibly after 60 s. */
  @Override
  public void close() {
    for (Host host : hosts) {
      try {
        send(host, "stop");
      } catch (IOException e) {
        host.process().destroy();
      }
    }
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    for (Host host : hosts) {
      try {
        if (!host.process().waitFor(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
          host.process().destroyForcibly();
          host.process().waitFor(10, TimeUnit.SECONDS);
        }
      } catch (InterruptedException e) {
        host.process().destroyForcibly();
        Thread.currentThread().interrupt();
      }
    }
    try (var files = Files.list(logs)) {
      for (Path f : files.toList()) {
        Files.deleteIfExists(f);
      }
      Files.deleteIfExists(logs);
    } catch (IOException e) {
      // temporary files: left behind
    }
  }

  private static void send(Host host, String line) throws IOException {
    host.in().write(line);
    host.in().newLine();
    host.in().flush();
  }

  // the next protocol line of a process (other lines are ignored), or null at the deadline or its end
  private static String nextLine(Host host, long deadline) throws InterruptedException {
    while (true) {
      String line = host.out().poll(Math.max(1, Math.min(200, (deadline - System.nanoTime()) / 1_000_000)),
          TimeUnit.MILLISECONDS);
      if (line != null) {
        if (line.equals("ready") || line.startsWith("stats ")) {
          return line;
        }
        continue;
      }
      if (System.nanoTime() - deadline >= 0 || (!host.process().isAlive() && host.out().isEmpty())) {
        return null;
      }
    }
  }

  private static String tail(Path log) {
    try {
      List<String> lines = Files.readAllLines(log);
      return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
    } catch (IOException e) {
      return "(no log)";
    }
  }
}
