package dev.pgtask.internal.executor;

import dev.pgtask.internal.complete.Outcome;
import dev.pgtask.internal.complete.OutcomeWriter;
import dev.pgtask.internal.lease.HeldRegistry;
import dev.pgtask.internal.WorkerConfig;
import dev.pgtask.internal.sql.HeldQueries;
import dev.pgtask.internal.sql.ClaimQueries.Claimed;
import dev.pgtask.internal.sql.HeldQueries.HeldState;
import dev.pgtask.internal.sql.Sql;
import dev.pgtask.internal.sql.gen.enums.TaskState;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The registry of the tasks this worker holds, each a {@link LocalTask} from its claim until its
 * outcome is durable (or it is lost), and what keeps them true to the database: cancellation hints
 * and the results of the held-task checks. It writes no lease: {@link dev.pgtask.internal.lease.Leases} does (and applies
 * the renewals' answers), for the tasks listed by {@link #heldWithoutTransaction}.
 *
 * <p>Threads: {@link #held} is a concurrent map. It is written by {@link #register} (the producer's
 * thread, or the caller of a direct run) and by {@link #finished} (an executor thread, the
 * completer, the shutdown); it is read by everyone (the lease keeper, the listener's hints, the
 * views of what runs here, the shutdown). {@link #verifiedCancels} and {@link #lastAppliedCheck}
 * are guarded by {@link #registry}: written by {@link #apply} (the lease keeper's thread), read and
 * written by {@link #register}, so a cancel request verified before its claim was registered is not
 * lost. {@link #claimsInFlight} (atomic) is written by the producer's thread, read by the listener
 * ({@link #hint}) and the lease keeper; {@link #checks} (atomic) is written by the lease keeper.
 */
final class HeldTasks implements HeldRegistry {

  private static final Logger log = LoggerFactory.getLogger(HeldTasks.class);

  private final WorkerConfig config;
  private final KindSettings kinds;
  private final Capacity capacity;
  private final OutcomeWriter writer;
  /** Every task claimed here whose outcome is not durable yet. Written by the claim and by {@link #finished}. */
  private final Map<Long, LocalTask> held = new ConcurrentHashMap<>();
  private final Object registry = new Object();
  /** Verified cancel requests for tasks whose claim is not registered yet. Guarded by {@link #registry}. */
  private Set<Long> verifiedCancels = new HashSet<>();
  private final AtomicInteger claimsInFlight = new AtomicInteger();
  private final AtomicLong checks = new AtomicLong();
  private long lastAppliedCheck; // guarded by registry

  HeldTasks(WorkerConfig config, KindSettings kinds, Capacity capacity, OutcomeWriter writer) {
    this.config = config;
    this.kinds = kinds;
    this.capacity = capacity;
    this.writer = writer;
  }

  /** A claim is about to be sent: its answer may name tasks not registered yet. */
  void claimStarting() {
    claimsInFlight.incrementAndGet();
  }

  /** The claim's answer is lost: nothing to register from it. */
  void claimFailed() {
    claimsInFlight.decrementAndGet();
  }

  List<LocalTask> register(List<Claimed> tasks, long claimNanos) {
    List<LocalTask> local = new ArrayList<>(tasks.size());
    synchronized (registry) {
      claimsInFlight.decrementAndGet();
      for (Claimed c : tasks) {
        LocalTask t = new LocalTask(c, config.workerId(), claimNanos, kinds.runsPlain(c));
        held.put(c.id(), t);
        capacity.taken();
        if (verifiedCancels.remove(c.id())) {
          t.requestStop(LocalTask.Stop.CANCELLED);
        }
        local.add(t);
      }
    }
    return local;
  }

  /**
   * The task's outcome is durable (or it was lost): it is no longer held here. The one way a task
   * becomes {@code DONE}, on whichever thread lets it go; the first call wins, later ones change
   * nothing.
   */
  void finished(LocalTask t) {
    if (!t.done()) {
      return;
    }
    held.remove(t.id(), t);
    capacity.freeSlot(t);
  }

  /** Writes an outcome outside any task transaction (autocommit), counts it, and lets the task go. */
  void writeAlone(LocalTask t, Outcome o, long startNanos) {
    try {
      TaskState result = writer.write(Sql.using(config.dataSource()), t, o);
      writer.count(t, o, result, startNanos);
    } catch (RuntimeException e) {
      log.warn("pgtask: could not record the outcome of task {} ({}); it will be rescued after its lease",
          t.id(), e.getMessage());
    } finally {
      finished(t);
    }
  }

  /** Claimed tasks not finished yet (waiting or running). */
  int inFlight() {
    return held.size();
  }

  /** The ids of the tasks held here. */
  List<Long> ids() {
    return new ArrayList<>(held.keySet());
  }

  /** The ids of the tasks whose handler is running here. */
  List<Long> runningTaskIds() {
    List<Long> ids = new ArrayList<>();
    for (LocalTask t : held.values()) {
      if (t.state() == LocalTask.State.RUNNING) {
        ids.add(t.id());
      }
    }
    return ids;
  }

  @Override
  public List<LocalTask> held() {
    return new ArrayList<>(held.values());
  }

  /** The held tasks as they come and go (weakly consistent), without a copy. */
  Collection<LocalTask> live() {
    return Collections.unmodifiableCollection(held.values());
  }

  /** The tasks whose lease must be kept alive: those no transaction of ours has locked. */
  @Override
  public List<LocalTask> heldWithoutTransaction() {
    List<LocalTask> out = new ArrayList<>();
    for (LocalTask t : held.values()) {
      LocalTask.State s = t.state();
      if (s == LocalTask.State.WAITING || (t.plain && s != LocalTask.State.DONE)) {
        out.add(t);
      }
    }
    return out;
  }

  // ---- cancellations: hints, verified against durable state ----

  /**
   * A cancellation hint from the control channel naming {@code taskId}. It changes nothing by
   * itself: a task held here is marked, to be checked before it starts; returns whether the held
   * tasks should be read from the database soon (a hint naming a task not held here, nor possibly
   * on its way from a claim, is dropped without a read).
   */
  boolean hint(long taskId) {
    LocalTask t = held.get(taskId);
    if (t != null) {
      t.markSuspect();
      return true;
    }
    return claimsInFlight.get() > 0;
  }

  @Override
  public boolean claimInFlight() {
    return claimsInFlight.get() > 0;
  }

  @Override
  public long checkStarting() {
    return checks.incrementAndGet();
  }

  /**
   * Applies what {@link HeldQueries#checkHeld} found in check number {@code check}. Stop requests
   * apply whatever the order; the verified requests for unregistered claims are replaced only by a
   * check that started later than the one that last replaced them.
   */
  @Override
  public void apply(Map<Long, HeldQueries.Held> found, long check) {
    synchronized (registry) {
      Set<Long> unregistered = new HashSet<>();
      found.forEach((id, answer) -> {
        HeldState state = answer.state();
        LocalTask t = held.get(id);
        if (t == null) {
          if (state == HeldState.CANCEL_REQUESTED) {
            unregistered.add(id); // verified: owned by this worker, its claim's answer still on its way
          }
          return;
        }
        if (t.claimed.attempt() != answer.attempt()) {
          // about another attempt: an earlier one, rescued, that this worker held when the check
          // read, and has claimed again since (the held attempt is checked at the next read)
          return;
        }
        LocalTask.Stop stop = state == HeldState.CANCEL_REQUESTED ? LocalTask.Stop.CANCELLED : LocalTask.Stop.LOST;
        if (t.requestStop(stop)) {
          log.info("pgtask: task {} attempt {}: {}", id, t.claimed.attempt(),
              stop == LocalTask.Stop.CANCELLED ? "cancellation requested; stopping it" : "no longer this worker's; stopping it");
        }
      });
      if (check > lastAppliedCheck) {
        lastAppliedCheck = check;
        verifiedCancels = unregistered;
      } else {
        verifiedCancels.addAll(unregistered);
      }
    }
  }
}
