package dev.pgtask.internal.executor;

import dev.pgtask.internal.complete.Completer;
import dev.pgtask.internal.complete.Outcome;
import dev.pgtask.internal.complete.Outcomes;
import dev.pgtask.internal.lease.Leases;
import dev.pgtask.internal.HandlerEntry;
import dev.pgtask.internal.WorkerConfig;
import dev.pgtask.internal.sql.HeldQueries;
import dev.pgtask.internal.sql.Sql;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Plain mode: a task run outside any transaction, after its start fence (it is still this worker's
 * and not cancelled: known without a read, or checked with a lease renewal), its completion handed
 * to the {@link Completer}, any other outcome written at once.
 *
 * <p>Runs on an executor thread (or a direct run's caller), which writes the task's state; the
 * start fence's lease renewal is written (and its answer applied) by {@link Leases}, on that thread.
 * {@link #listeningSince} is written once by the worker's wiring before the threads start; the
 * supplier it holds is the listener's (read here, written by the listener's thread).
 */
final class PlainRun {

  private static final Logger log = LoggerFactory.getLogger(PlainRun.class);

  private final WorkerConfig config;
  private final Outcomes outcomes;
  private final HeldTasks held;
  private final Leases leases;
  private final Intake intake;
  private final Capacity capacity;
  private final Completer completer;
  private final HandlerCall call;
  private volatile LongSupplier listeningSince = () -> 0;

  PlainRun(WorkerConfig config, Outcomes outcomes, HeldTasks held, Leases leases, Intake intake, Capacity capacity,
      Completer completer, HandlerCall call) {
    this.config = config;
    this.outcomes = outcomes;
    this.held = held;
    this.leases = leases;
    this.intake = intake;
    this.capacity = capacity;
    this.completer = completer;
    this.call = call;
  }

  /**
   * Where the listener tells since when it listens without a break (System.nanoTime(), 0 while it
   * does not): a plain task claimed after that may start without a check of its own.
   */
  void listeningSince(LongSupplier since) {
    this.listeningSince = since;
  }

  <T> void runPlain(LocalTask t, HandlerEntry<T> handler) {
    long startNanos = System.nanoTime();
    if (!mayStartWithoutCheck(t) && !fenceStart(t)) {
      if (intake.ready.contains(t)) {
        return; // the check could not be made; it waits for its next turn
      }
      log.info("pgtask: task {} attempt {} was cancelled or rescued before it started; not running it",
          t.id(), t.claimed.attempt());
      held.finished(t);
      return;
    }
    if (t.stopReason() != LocalTask.Stop.NONE) {
      held.writeAlone(t, outcomes.ofStop(t, t.stopReason()), startNanos);
      return;
    }
    HandlerCall.Payload<T> payload;
    try {
      payload = call.parse(t, handler);
    } catch (Exception e) {
      held.writeAlone(t, HandlerCall.payloadMismatch(t, handler, e), startNanos);
      return;
    }
    Duration timeout = outcomes.timeout(t);
    t.running(null, null, null, payload.node(), t.claimed.claimedAt().plus(timeout));
    Outcome outcome = call.supervise(t, handler, payload.value(), timeout);
    t.finishing();
    if (outcome instanceof Outcome.Completed) {
      completer.complete(t, startNanos);
      capacity.freeSlot(t);
    } else {
      held.writeAlone(t, outcome, startNanos);
    }
  }

  /**
   * Whether a plain task may start on what this worker already knows: no cancellation hint named
   * it, the listener has listened without a break since before the task was last known to be
   * this worker's (its claim, or its last lease renewal, which is also a check), so a
   * {@code cancel_task} since then would have been heard, and that renewal is less than half a
   * lease old, so no rescue can have taken it. Otherwise {@link #fenceStart} asks the database.
   */
  private boolean mayStartWithoutCheck(LocalTask t) {
    long since = listeningSince.getAsLong();
    long known = t.leaseFromNanos();
    return !t.suspect() && since != 0 && since - known < 0
        && System.nanoTime() - known < config.leaseDuration().toNanos() / 2;
  }

  /**
   * Has {@link Leases#fenceStart} renew the lease of {@code t} (and, while the listener listens, of
   * every other waiting plain task that would need the same check, in the same statement): a
   * renewal succeeds only for a task still running as this worker's claim, and reads its cancel
   * request. Returns whether {@code t} is still ours; a cancel request found becomes a stop request
   * (by {@link Leases} for the renewed, here for what the durable state says of a task not renewed).
   */
  private boolean fenceStart(LocalTask t) {
    List<LocalTask> batch = new ArrayList<>();
    batch.add(t);
    if (listeningSince.getAsLong() != 0) {
      for (LocalTask other : held.live()) {
        if (other != t && other.plain && other.state() == LocalTask.State.WAITING && batch.size() < 500
            && !mayStartWithoutCheck(other)) {
          batch.add(other);
        }
      }
    }
    for (LocalTask b : batch) {
      b.clearSuspect(); // before the read: a hint arriving from now on marks it again
    }
    try {
      for (int round = 0; ; round++) {
        Map<Long, Boolean> found = leases.fenceStart(batch);
        if (found.containsKey(t.id())) {
          return true;
        }
        // not renewed: no longer ours, or its row was locked for a moment (another renewal, an
        // operator's lock attempt); the durable state says which
        HeldQueries.Held answer = HeldQueries.checkHeld(Sql.using(config.dataSource()),
            config.workerId(), List.of(t.fence())).get(t.id());
        HeldQueries.HeldState state = answer == null || answer.attempt() != t.claimed.attempt() ? null : answer.state();
        if (state == HeldQueries.HeldState.GONE) {
          t.requestStop(LocalTask.Stop.LOST);
          return false;
        }
        if (state == HeldQueries.HeldState.CANCEL_REQUESTED) {
          t.requestStop(LocalTask.Stop.CANCELLED);
          return true;
        }
        if (round == 4) {
          return true; // ours as of the read just made
        }
        batch = List.of(t);
        Thread.sleep(2);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return true;
    } catch (SQLException | RuntimeException e) {
      log.warn("pgtask: could not check task {} before starting it ({}); it waits for its next turn", t.id(),
          e.getMessage());
      t.markSuspect();
      try {
        Thread.sleep(100);
      } catch (InterruptedException ie) {
        Thread.currentThread().interrupt();
      }
      intake.ready.addLast(t);
      return false;
    }
  }
}
