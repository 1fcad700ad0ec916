package dev.pgtask.internal.executor;

import dev.pgtask.internal.complete.Completer;
import dev.pgtask.internal.lease.LeaseKeeper;
import dev.pgtask.internal.WorkerConfig;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The executor's graceful stop, bounded in time: what waits is put back, what runs gets the grace,
 * then stop requests, then the task connections are aborted; then the helper threads stop and what
 * this worker's claims left is put back.
 *
 * <p>Runs on the thread that stops the worker; it writes the {@link Stopping} flags (read by
 * everyone else), sends stop requests from threads of its own (one per task: a cancel request may
 * block), and reads {@link ExecutorThread#tx} of each executor thread to abort it.
 */
final class ExecutorShutdown {

  private static final Logger log = LoggerFactory.getLogger(ExecutorShutdown.class);

  /**
   * How long a stop may take beyond the shutdown timeout: interrupted tasks roll back and are put
   * back within it, or have their connections aborted.
   */
  static final Duration STOP_ALLOWANCE = Duration.ofSeconds(5);

  /** The executor's own threads, as the shutdown sees them. */
  interface Threads {
    /** Waits until the executor threads have ended or {@code deadline} (System.nanoTime()); whether they ended. */
    boolean awaitUntil(long deadline);

    /** Tells the executor threads to end, without waiting. */
    void stopNow();
  }

  private final WorkerConfig config;
  private final Stopping stop;
  private final Intake intake;
  private final HeldTasks held;
  private final Set<ExecutorThread> workers;
  private final Threads threads;
  private final LeaseKeeper keeper;
  private final Completer completer;
  private final HandlerCall call;

  ExecutorShutdown(WorkerConfig config, Stopping stop, Intake intake, HeldTasks held, Set<ExecutorThread> workers,
      Threads threads, LeaseKeeper keeper, Completer completer, HandlerCall call) {
    this.config = config;
    this.stop = stop;
    this.intake = intake;
    this.held = held;
    this.workers = workers;
    this.threads = threads;
    this.keeper = keeper;
    this.completer = completer;
    this.call = call;
  }

  /**
   * Graceful stop: tasks not yet started are released at once; running tasks get until
   * {@code grace} to finish, then are interrupted and their statements cancelled. A task
   * transaction whose thread has not let go halfway through {@link #STOP_ALLOWANCE} has its
   * connection aborted (the server rolls it back and drops its locks; a thread blocked in a socket
   * read, e.g. waiting for a session pooler's server session, is freed). Then whatever this
   * worker's claims left without a holder is put back, in what is left of the allowance; what
   * cannot be put back in time is rescued once this worker's row is gone or expired. Returns
   * within {@code grace} plus the allowance.
   */
  void shutdown(Duration grace) {
    stop.stopping = true;
    long deadline = System.nanoTime() + grace.toNanos();
    long end = deadline + STOP_ALLOWANCE.toNanos();
    // what no thread has taken yet goes back now, not when a running task lets its thread go: the
    // put-back notifies the queues, and the other workers run those tasks while these finish
    bounded("pgtask-release-" + config.workerId(), intake::releaseWaiting, deadline,
        "putting back the tasks not started yet");
    try {
      if (!threads.awaitUntil(deadline)) {
        // each on a thread of its own: a stop request cancels the running statement, and a cancel
        // request to a server that does not answer waits (pgjdbc's cancelSignalTimeout, 10 s)
        for (LocalTask t : held.live()) {
          Thread stopper = new Thread(() -> t.requestStop(LocalTask.Stop.SHUTDOWN), "pgtask-stop-" + t.id());
          stopper.setDaemon(true);
          stopper.start();
        }
        if (!threads.awaitUntil(deadline + STOP_ALLOWANCE.toNanos() / 2)) {
          int aborted = abortTransactions();
          if (!threads.awaitUntil(deadline + STOP_ALLOWANCE.toNanos() * 3 / 4)) {
            log.warn("pgtask: {} task(s) still held at shutdown after their interruption ({} task connection(s) "
                + "aborted: the server rolls those back); the database does not answer or a handler ignores "
                + "interruption; what is left ends with the process", held.runningTaskIds().size(), aborted);
          } else if (aborted > 0) {
            log.warn("pgtask: aborted the connections of {} task transaction(s) that did not end after their "
                + "interruption at shutdown; the server rolls them back", aborted);
          }
        }
      }
    } finally {
      stop.closed = true;
      threads.stopNow();
      keeper.stop(upTo(Duration.ofSeconds(5), end));
      completer.stop(upTo(Duration.ofSeconds(10), end));
      call.close();
      // both need a connection from the pool, which may have none to give: each waits at most what is left
      bounded("pgtask-flush-" + config.workerId(), completer::flushRemaining, end,
          "writing the outcomes of finished plain tasks");
      bounded("pgtask-release-" + config.workerId(), intake::releaseOrphans, end,
          "putting back the tasks this worker no longer holds");
    }
  }

  /** {@code max}, or what is left until {@code deadline} when that is less (at least 100 ms). */
  private static Duration upTo(Duration max, long deadline) {
    long left = Math.max(TimeUnit.MILLISECONDS.toNanos(100), deadline - System.nanoTime());
    return Duration.ofNanos(Math.min(max.toNanos(), left));
  }

  /** Runs {@code step} on a daemon thread and waits for it until {@code deadline} (at least 100 ms). */
  private void bounded(String thread, Runnable step, long deadline, String what) {
    boolean finished = dev.pgtask.internal.Bounded.run(thread, step,
        Math.max(TimeUnit.MILLISECONDS.toNanos(100), deadline - System.nanoTime()),
        e -> log.warn("pgtask: {} failed at shutdown", what, e));
    if (!finished) {
      log.warn("pgtask: {} did not finish within the shutdown timeout (no connection from the pool?); the tasks "
          + "concerned are rescued once this worker's row is gone", what);
    }
  }

  /**
   * Aborts the connection of every open task transaction (JDBC {@code Connection.abort}: the socket is
   * closed at once, without waiting for the thread that uses it). Returns how many.
   */
  private int abortTransactions() {
    int n = 0;
    for (ExecutorThread w : workers) {
      TaskTransaction tx = w.tx;
      if (tx != null && tx.abort()) {
        n++;
      }
    }
    return n;
  }
}
