package dev.pgtask.internal.notifier;

import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The workers of one JVM that listen on one database: one of their sessions LISTENs for all of
 * them, the others only run their own rounds. PostgreSQL (15, as measured) signals every session
 * of a database that listens on any channel for every notification committed in it, and each
 * signalled session wakes and reads the notification queue in a transaction of its own: with 64
 * workers in a process, 64 transactions per notification, all in the same JVM (docs/benchmarks.md,
 * "Scale"). So within a process a notification is read from the server once and passed on here.
 *
 * <p>Protocol. A listener whose session is up joins the group of its database ({@link #KEY_QUERY}:
 * the database's name and oid and the server's start time, read on the session); the first member
 * whose session is up becomes the primary and LISTENs. Every notification a listening member
 * receives goes to every member ({@link #dispatch}). While a member's LISTENs are in place the group
 * hears; each hearing has its own number (the epoch), and a member reads what it may have missed
 * (cancel requests, a poll) each time a new one starts. When the primary's session is lost, the
 * group stops hearing at once, and the next member with a session up is asked to LISTEN
 * ({@link Member#signal}). A primary that stops hands over first ({@link #handOver}): its successor
 * LISTENs before it closes, so the hearing goes on without a break. A member's session that is lost
 * leaves the group's hearing alone: the member still receives what the primary passes on. Sessions
 * that do not LISTEN are not signalled by the server.
 *
 * <p>Threads: every method may be called from any member's listener thread; the state is guarded
 * by this object's monitor, the members' notification sinks are called on the primary's thread.
 */
final class ListenGroup {

  private static final Logger log = LoggerFactory.getLogger(ListenGroup.class);

  /** What the group needs of a member: its notification sink and a way to wake its thread. */
  interface Member {
    /** A notification the primary received (on the primary's thread: keep it short). */
    void received(String channel, String payload, long nanos);

    /** The group changed for this member: asked to LISTEN, or the hearing stopped or started. */
    void signal();

    /** For messages. */
    String name();
  }

  /** What a member reads of the group's hearing: its epoch, and since when (System.nanoTime()). */
  record Hearing(long epoch, long since) {}

  // guarded by GROUPS
  private static final Map<String, ListenGroup> GROUPS = new HashMap<>();

  private final String key;
  // every member (its session up or not): whom the primary passes notifications on to
  private final List<Member> members = new CopyOnWriteArrayList<>();
  // guarded by this: members whose session is up, in the order they came; the primary, or null
  private final Set<Member> connected = new LinkedHashSet<>();
  // guarded by this: members whose LISTENs are in place (the primary; for a moment, during a hand-over, two)
  private final Set<Member> listeners = new java.util.HashSet<>();
  private Member primary;
  private long epoch;
  // written under this object's monitor; read without it
  private volatile Hearing hearing; // null while the primary does not listen

  private ListenGroup(String key) {
    this.key = key;
  }

  /** The query that names the database of a session for {@link #join}: its name and oid, the server's start. */
  static final String KEY_QUERY = "SELECT d.datname || ' ' || d.oid || ' ' || pg_postmaster_start_time() AS key "
      + "FROM pg_database d WHERE d.datname = current_database()";

  /** Joins (or creates) the group of database {@code key}; {@code m} receives notifications from now on. */
  static ListenGroup join(String key, Member m) {
    synchronized (GROUPS) {
      ListenGroup g = GROUPS.computeIfAbsent(key, ListenGroup::new);
      g.members.add(m);
      return g;
    }
  }

  /** {@code m} leaves: it receives nothing any more (call after {@link #disconnected}). */
  void leave(Member m) {
    synchronized (GROUPS) {
      disconnected(m);
      members.remove(m);
      if (members.isEmpty()) {
        GROUPS.remove(key, this);
      }
    }
  }

  String key() {
    return key;
  }

  /** {@code m}'s session is up: returns whether it is to LISTEN for the group (it is the primary). */
  synchronized boolean connected(Member m) {
    connected.add(m);
    if (primary == null) {
      primary = m;
    }
    return primary == m;
  }

  /** Whether {@code m} is to LISTEN for the group. */
  synchronized boolean isPrimary(Member m) {
    return primary == m;
  }

  /**
   * {@code m}'s LISTENs are in place since {@code since} (System.nanoTime()): if no other member
   * listened until now, a new hearing starts.
   */
  void listening(Member m, long since) {
    synchronized (this) {
      listeners.add(m);
      notifyAll(); // a hand-over waits for this
      if (hearing != null) {
        return; // a hand-over: the group heard without a break
      }
      epoch++;
      hearing = new Hearing(epoch, since);
    }
    signalAll();
  }

  /** The group's hearing now, or null while no session listens for it. */
  Hearing hearing() {
    return hearing;
  }

  /**
   * {@code m}'s session is down (lost or closed). If it was the last one listening, the group stops
   * hearing; if it was the primary, the next member with a session up is asked to LISTEN.
   */
  void disconnected(Member m) {
    Member next = null;
    boolean changed = false;
    synchronized (this) {
      connected.remove(m);
      if (listeners.remove(m) && listeners.isEmpty()) {
        epoch++;
        hearing = null;
        changed = true;
      }
      if (primary == m) {
        primary = connected.isEmpty() ? null : connected.iterator().next();
        next = primary;
        changed = true;
      }
    }
    if (changed) {
      signalAll();
    }
    if (next != null) {
      log.debug("pgtask listener of {} closed its session; the session of {} listens for the process's workers now",
          m.name(), next.name());
    }
  }

  /**
   * {@code m} is about to close its session: if it is the primary, another member with a session up
   * is asked to LISTEN, and this waits up to {@code millis} until it does, so that the group hears
   * without a break (both listen for a moment: a notification may be passed on twice, which only
   * wakes a producer once more).
   */
  void handOver(Member m, long millis) {
    Member next;
    synchronized (this) {
      if (primary != m) {
        return;
      }
      next = null;
      for (Member c : connected) {
        if (c != m) {
          next = c;
          break;
        }
      }
      if (next == null) {
        return;
      }
      primary = next;
    }
    next.signal();
    long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(millis);
    synchronized (this) {
      long left;
      while (primary == next && !listeners.contains(next)
          && (left = deadline - System.nanoTime()) > 0) {
        try {
          java.util.concurrent.TimeUnit.NANOSECONDS.timedWait(this, left);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }
  }

  /** Passes a notification the primary received on to every member (on the primary's thread). */
  void dispatch(String channel, String payload, long nanos) {
    for (Member m : members) {
      try {
        m.received(channel, payload, nanos);
      } catch (RuntimeException e) {
        log.warn("pgtask listener: handling a notification for {} failed: {}", m.name(), e.getMessage());
      }
    }
  }

  private void signalAll() {
    for (Member m : members) {
      m.signal();
    }
  }

  /** How many groups exist (tests). */
  static int count() {
    synchronized (GROUPS) {
      return GROUPS.size();
    }
  }
}
