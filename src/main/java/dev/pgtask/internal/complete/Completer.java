package dev.pgtask.internal.complete;

import dev.pgtask.internal.Service;
import dev.pgtask.internal.WorkerConfig;
import dev.pgtask.internal.executor.LocalTask;
import dev.pgtask.internal.sql.CompletionQueries;
import dev.pgtask.internal.sql.Fence;
import java.sql.Connection;
import java.sql.SQLException;
import dev.pgtask.internal.sql.gen.enums.TaskState;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes plain-mode completions in batches: one fenced UPDATE and one commit for up to
 * {@value #MAX_BATCH} tasks, at least every {@value #FLUSH_MILLIS} ms. Until written, a completed
 * task stays held here (its lease kept by the {@code LeaseKeeper}, written by {@code Leases}); a failed write is tried again.
 *
 * <p>Threads: {@link #pending} is guarded by {@link #lock}; written by the executor threads
 * ({@link #complete}) and by the completer's thread (it takes a batch, and puts back one whose
 * write failed); at shutdown, after the completer's thread stopped, the shutdown's flush thread
 * takes what is left. Once a batch is written, the writing thread lets its tasks go through
 * {@link #letGo} (the executor's {@code HeldTasks.finished}: their state becomes {@code DONE}); the
 * completer never writes a task's state itself.
 */
public final class Completer extends Service {

  private static final Logger log = LoggerFactory.getLogger(Completer.class);
  static final int MAX_BATCH = 500;
  static final long FLUSH_MILLIS = 5;

  /** A plain task whose handler returned, waiting for its completion to be written. */
  private record Pending(LocalTask task, long startNanos) {}

  private final WorkerConfig config;
  private final OutcomeWriter writer;
  /** Lets a task go once its completion is written or given up: the executor's registry. */
  private final Consumer<LocalTask> letGo;
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition nonEmpty = lock.newCondition();
  private List<Pending> pending = new ArrayList<>(); // guarded by lock

  /** {@code letGo}: called with each task once its completion is written (or given up at shutdown). */
  public Completer(WorkerConfig config, OutcomeWriter writer, Consumer<LocalTask> letGo) {
    super("pgtask-completer-" + config.workerId(), 1);
    this.config = config;
    this.writer = writer;
    this.letGo = letGo;
  }

  /** A plain task's handler returned: its completion is written with the next batch. */
  public void complete(LocalTask t, long startNanos) {
    lock.lock();
    try {
      pending.add(new Pending(t, startNanos));
      if (pending.size() >= MAX_BATCH || pending.size() == 1) {
        nonEmpty.signal();
      }
    } finally {
      lock.unlock();
    }
  }

  @Override
  protected void onStop() {
    lock.lock();
    try {
      nonEmpty.signalAll();
    } finally {
      lock.unlock();
    }
  }

  /** Writes what is still pending (after {@link #stop}): one try, then the leases expire. */
  public void flushRemaining() {
    flush(take(), false);
  }

  private List<Pending> take() {
    lock.lock();
    try {
      List<Pending> out = pending;
      pending = new ArrayList<>();
      return out;
    } finally {
      lock.unlock();
    }
  }

  @Override
  protected void run(int index) {
    while (isRunning()) {
      lock.lock();
      try {
        if (pending.isEmpty()) {
          nonEmpty.await(250, TimeUnit.MILLISECONDS);
        }
      } catch (InterruptedException e) {
        // the flag decides
      } finally {
        lock.unlock();
      }
      if (!isRunning()) {
        return;
      }
      try {
        Thread.sleep(FLUSH_MILLIS); // let a few more completions join the batch
      } catch (InterruptedException e) {
        // flush anyway
      }
      flush(take(), true);
    }
  }

  private void flush(List<Pending> batch, boolean retry) {
    for (int from = 0; from < batch.size(); from += MAX_BATCH) {
      List<Pending> part = batch.subList(from, Math.min(batch.size(), from + MAX_BATCH));
      List<Fence> fences = new ArrayList<>(part.size());
      for (Pending p : part) {
        fences.add(p.task().fence());
      }
      try (Connection c = config.dataSource().getConnection()) {
        int done = CompletionQueries.completeAll(c, fences);
        if (done < part.size()) {
          log.info("pgtask: {} plain-mode completion(s) were fenced out (the tasks were cancelled or rescued meanwhile)",
              part.size() - done);
        }
        for (int i = 0; i < part.size(); i++) {
          Pending p = part.get(i);
          // the statement reports how many, not which: the fenced-out ones (rare) are counted last
          writer.count(p.task(), new Outcome.Completed(), i < done ? TaskState.completed : null, p.startNanos());
          letGo.accept(p.task());
        }
      } catch (SQLException | RuntimeException e) {
        if (!retry) {
          log.warn("pgtask: recording {} completion(s) at shutdown failed ({}); those tasks run again after their lease",
              part.size(), e.getMessage());
          part.forEach(p -> letGo.accept(p.task()));
          continue;
        }
        log.warn("pgtask: recording {} completion(s) failed ({}); retrying", part.size(), e.getMessage());
        lock.lock();
        try {
          pending.addAll(part);
        } finally {
          lock.unlock();
        }
        try {
          Thread.sleep(100);
        } catch (InterruptedException ie) {
          return;
        }
      }
    }
  }
}
