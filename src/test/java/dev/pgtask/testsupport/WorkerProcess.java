package dev.pgtask.testsupport;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.awaitility.core.ConditionTimeoutException;

/**
 * A worker in its own JVM: {@code dev.pgtask.cli.Main worker --demo-handlers ...} on the test
 * classpath (the same entry point as {@code bin/pgtask worker}). Output goes to a log file under
 * {@code target/worker-logs}, printed when a test wants it.
 */
public final class WorkerProcess implements AutoCloseable {

  /** What {@code pgtask worker} logs once it runs, its signal handling installed before. */
  static final String STARTED = " started: queues ";

  private final Process process;
  private final Path log;
  private final String name;

  private WorkerProcess(Process process, Path log, String name) {
    this.process = process;
    this.log = log;
    this.name = name;
  }

  /** Starts a worker with the demo handlers against {@code db}; extra CLI arguments follow. */
  public static WorkerProcess start(TestDatabase db, String name, String... extraArgs) throws IOException {
    return startWithUrl(db, db.fullUrl(), name, extraArgs);
  }

  /** As {@link #start(TestDatabase, String, String...)}, connecting with {@code url} (e.g. through PgBouncer). */
  public static WorkerProcess startWithUrl(TestDatabase db, String url, String name, String... extraArgs) throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Xmx256m");
    cmd.add("-XX:+UseSerialGC");
    cmd.add("-XX:TieredStopAtLevel=1");
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add("dev.pgtask.cli.Main");
    cmd.add("worker");
    cmd.add("--url");
    cmd.add(url);
    cmd.add("--demo-handlers");
    cmd.addAll(List.of(extraArgs));
    Path dir = Path.of("target", "worker-logs");
    Files.createDirectories(dir);
    Path log = dir.resolve(db.name() + "-" + name + "-" + System.nanoTime() + ".log");
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
    return new WorkerProcess(pb.start(), log, name);
  }

  public long pid() {
    return process.pid();
  }

  public boolean isAlive() {
    return process.isAlive();
  }

  /**
   * SIGTERM, then waits for the exit code. A worker that is still starting is first given up to
   * {@code timeout} to finish starting: until it has installed its signal handling (just before its
   * {@value #STARTED} line), a SIGTERM ends its JVM with 143, not with its orderly stop (a worker
   * restarted by a test on a loaded machine can take seconds to start).
   */
  public int terminate(Duration timeout) throws InterruptedException {
    awaitStartedOrExited(timeout);
    process.destroy();
    if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
      process.destroyForcibly().waitFor();
      throw new AssertionError("worker " + name + " did not exit within " + timeout + " after SIGTERM\n" + log());
    }
    return process.exitValue();
  }

  /** Waits until the worker logged that it started; fails if it exits first or takes longer than {@code timeout}. */
  public void awaitStarted(Duration timeout) {
    Awaitility.await("worker " + name + " started").atMost(timeout).pollDelay(Duration.ZERO)
        .pollInterval(Duration.ofMillis(50)).until(() -> {
          if (log().contains(STARTED)) {
            return true;
          }
          if (!process.isAlive()) {
            throw new AssertionError("worker " + name + " exited before it started\n" + log());
          }
          return false;
        });
  }

  /** Waits until the worker logged that it started, or exited; at most {@code timeout}. */
  private void awaitStartedOrExited(Duration timeout) {
    try {
      Awaitility.await("worker " + name + " started or exited").atMost(timeout).pollDelay(Duration.ZERO)
          .pollInterval(Duration.ofMillis(50)).until(() -> !process.isAlive() || log().contains(STARTED));
    } catch (ConditionTimeoutException e) {
      // still starting after the whole timeout: the SIGTERM's exit code tells the test the rest
    }
  }

  /** SIGKILL: a crash. */
  public void kill() throws InterruptedException {
    process.destroyForcibly();
    process.waitFor();
  }

  /** Sends a signal with kill(1), e.g. STOP or CONT. */
  public void signal(String signal) throws IOException, InterruptedException {
    Process p = new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid())).inheritIO().start();
    if (p.waitFor() != 0) {
      throw new IOException("kill -" + signal + " " + process.pid() + " failed");
    }
  }

  public int waitForExit(Duration timeout) throws InterruptedException {
    if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
      throw new AssertionError("worker " + name + " still running after " + timeout);
    }
    return process.exitValue();
  }

  /** The worker's output so far. */
  public String log() {
    try {
      return Files.readString(log);
    } catch (IOException e) {
      return "(no log: " + e.getMessage() + ")";
    }
  }

  public File logFile() {
    return log.toFile();
  }

  @Override
  public void close() throws InterruptedException {
    if (process.isAlive()) {
      process.destroyForcibly().waitFor();
    }
  }
}
