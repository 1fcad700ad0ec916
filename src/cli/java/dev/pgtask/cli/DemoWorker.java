package dev.pgtask.cli;

import dev.pgtask.internal.sql.OpsQueries;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.jooq.DSLContext;

/** A worker process started by the demo: starting it, freezing and killing it, and its log. */
final class DemoWorker {

  static final Duration LEASE = Duration.ofSeconds(5);
  private static final Duration RESCUE_INTERVAL = Duration.ofSeconds(2);
  /** How long a frozen worker is given for what it already sent to take effect, before its tasks are counted. */
  private static final long FREEZE_SETTLE_MS = 200;

  final String id;
  final Process process;
  final Path log;

  private DemoWorker(String id, Process process, Path log) {
    this.id = id;
    this.process = process;
    this.log = log;
  }

  /**
   * Starts {@code pgtask worker --demo-handlers} in a new JVM with this JVM's class path. Where
   * to connect travels in the child's environment ({@link #environment}), never on its command
   * line, which every user of the machine can read ({@code ps}, {@code /proc/<pid>/cmdline}).
   */
  static DemoWorker start(String id, ConnectionSettings settings, int concurrency) throws IOException {
    return start(id, settings, null, concurrency);
  }

  /** As {@link #start(String, ConnectionSettings, int)}, with the LISTEN connection to {@code listenUrl} (or none). */
  static DemoWorker start(String id, ConnectionSettings settings, String listenUrl, int concurrency)
      throws IOException {
    Path log = Files.createTempFile("pgtask-demo-" + id + "-", ".log");
    ProcessBuilder pb = new ProcessBuilder(command(id, concurrency)).redirectErrorStream(true)
        .redirectOutput(log.toFile());
    Map<String, String> env = pb.environment();
    env.remove("PGPASSWORD");
    env.putAll(environment(settings));
    env.remove("PGTASK_LISTEN_URL");
    if (listenUrl != null) {
      env.put("PGTASK_LISTEN_URL", listenUrl); // in the environment: it may carry a password
    }
    return new DemoWorker(id, pb.start(), log);
  }

  /** The worker's command line: no URL, user or password on it. */
  static List<String> command(String id, int concurrency) {
    List<String> cmd = new ArrayList<>();
    cmd.add(javaBinary());
    cmd.addAll(List.of("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto"));
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(Main.class.getName());
    cmd.addAll(List.of("worker", "--demo-handlers", "--queue", DemoCommand.QUEUE,
        "--concurrency", String.valueOf(concurrency), "--lease-duration", LEASE.toSeconds() + "s",
        "--rescue-interval", RESCUE_INTERVAL.toSeconds() + "s", "--poll-interval", "1s", "--worker-id", id));
    return cmd;
  }

  /**
   * What the worker finds the database by, set in its environment only: {@code PGTASK_URL} (the
   * resolved JDBC URL, which may carry a password given in {@code --url}), {@code PGUSER} and
   * {@code PGPASSWORD} (when the password was given apart from the URL). A process's environment
   * is readable only by its own user and root.
   */
  static Map<String, String> environment(ConnectionSettings settings) {
    Map<String, String> env = new LinkedHashMap<>();
    env.put("PGTASK_URL", settings.jdbcUrl());
    if (settings.user() != null) {
      env.put("PGUSER", settings.user());
    }
    if (settings.password() != null) {
      env.put("PGPASSWORD", settings.password());
    }
    return env;
  }

  String lastLogLine() {
    try {
      List<String> lines = Files.readAllLines(log);
      return lines.isEmpty() ? "(no output)" : Main.oneLine(lines.get(lines.size() - 1));
    } catch (IOException e) {
      return "(log unreadable: " + e.getMessage() + ")";
    }
  }

  private static String javaBinary() {
    return ProcessHandle.current().info().command()
        .filter(c -> c.endsWith("java"))
        .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
  }

  /**
   * Kills {@code victim} with SIGKILL while it holds tasks and returns how many it held, or -1 when it
   * held none and was left running. A worker chosen because it held tasks a moment ago may finish
   * them all before the signal lands, and its kill would then show no rescue. So it is first frozen
   * (SIGSTOP), given a moment for what it already sent (a completion's COMMIT) to take effect, and
   * its tasks are counted: a frozen worker finishes nothing more. It is killed only if it holds
   * some, and thawed (SIGCONT) otherwise. Where kill(1) cannot be run, the worker is killed at once
   * and its tasks are counted after the kill.
   */
  static int killHolding(DSLContext dsl, DemoWorker victim) throws InterruptedException {
    boolean frozen = signal(victim.process, "STOP");
    if (frozen) {
      Thread.sleep(FREEZE_SETTLE_MS);
      if (OpsQueries.selectRunningByWorker(dsl, DemoCommand.QUEUE).getOrDefault(victim.id, 0) == 0) {
        signal(victim.process, "CONT");
        return -1;
      }
    }
    victim.process.destroyForcibly();
    victim.process.waitFor(10, TimeUnit.SECONDS);
    return OpsQueries.selectRunningByWorker(dsl, DemoCommand.QUEUE).getOrDefault(victim.id, 0);
  }

  /** Sends {@code signal} to {@code process} with kill(1); false when that cannot be done here. */
  private static boolean signal(Process process, String signal) throws InterruptedException {
    try {
      Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid()))
          .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
      return kill.waitFor(10, TimeUnit.SECONDS) && kill.exitValue() == 0;
    } catch (IOException e) {
      return false; // no kill(1) on this system
    }
  }
}
