package dev.pgtask.internal.maintenance;

import dev.pgtask.internal.sql.MaintenanceQueries;
import dev.pgtask.internal.sql.MaintenanceQueries.Unhandled;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executor;
import org.jooq.DSLContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Warns about due tasks whose kind no live worker of their queue handles: a WARN per queue and
 * kind, at most once every {@link Config#warnInterval}. Such tasks stay available forever, and a
 * tenant's tasks wait behind such a head (pgtask.unrunnable, pgtask.health). The leader checks every
 * queue every {@link Config#checkInterval}, in the transaction of its retention pass's first batch
 * ({@link RetentionPass}: one transaction for both); {@link #runOnce()} checks this worker's queues.
 */
public final class UnhandledKindsPass implements MaintenancePass<List<Unhandled>>, PassStatements<List<Unhandled>> {

  private static final Logger log = LoggerFactory.getLogger(UnhandledKindsPass.class);

  /**
   * {@code checkInterval}: how often the leader checks; {@code warnInterval}: a queue and kind is
   * logged at most this often; {@code queues}: the queues {@link #runOnce()} checks.
   */
  public record Config(Duration checkInterval, Duration warnInterval, List<String> queues) {
    /** How often the leader checks. */
    public static final Duration CHECK_INTERVAL = Duration.ofSeconds(30);
    /** A queue and kind no live worker handles is logged at most this often. */
    public static final Duration WARN_INTERVAL = Duration.ofMinutes(5);

    /** Validates: positive intervals, queues given. */
    public Config {
      if (checkInterval == null || checkInterval.isNegative() || checkInterval.isZero()
          || warnInterval == null || warnInterval.isNegative() || queues == null) {
        throw new IllegalArgumentException("unhandled kinds pass: " + checkInterval + ", " + warnInterval + ", " + queues);
      }
      queues = List.copyOf(queues);
    }

    /** A worker's check, of its queues on demand. */
    public static Config of(dev.pgtask.internal.WorkerConfig config) {
      return new Config(CHECK_INTERVAL, WARN_INTERVAL, config.queues());
    }
  }

  private final Config config;
  private final PassTransaction tx;
  // System.nanoTime() of the leader's last check (0: none yet); the maintenance thread's own
  private long lastCheck;
  // "queue kind" -> System.nanoTime() of the last warning; guarded by this
  private final Map<String, Long> warnedAt = new HashMap<>();

  UnhandledKindsPass(Config config, PassTransaction tx) {
    this.config = config;
    this.tx = tx;
  }

  @Override
  public String name() {
    return "unhandled kinds";
  }

  @Override
  public Duration interval() {
    return config.checkInterval();
  }

  /**
   * Whether the leader's check is due in a retention pass that starts {@code now} and comes every
   * {@code carrier} (a check interval since the last, less half of that: a pass's lateness).
   */
  boolean dueIn(long now, Duration carrier) {
    return lastCheck == 0 || now - lastCheck >= config.checkInterval().toNanos() - carrier.toNanos() / 2;
  }

  /** The leader's check: every queue. */
  @Override
  public List<Unhandled> run(DSLContext t) {
    return MaintenanceQueries.unhandledKinds(t, null);
  }

  /** Records the check of a pass that started {@code startedAt}, and warns about what it found. */
  void checked(long startedAt, List<Unhandled> found) {
    lastCheck = startedAt;
    warn(found);
  }

  @Override
  public void committed(List<Unhandled> found, Executor onPool) {
    checked(System.nanoTime(), found);
  }

  /** Checks this worker's queues now; returns the queue and kind pairs it warned about. */
  @Override
  public List<Unhandled> runOnce() {
    return warn(tx.onPool(PassTransaction.Fence.ANY, t -> MaintenanceQueries.unhandledKinds(t, config.queues())));
  }

  private synchronized List<Unhandled> warn(List<Unhandled> found) {
    List<Unhandled> warned = new ArrayList<>();
    long now = System.nanoTime();
    for (Unhandled u : found) {
      String key = u.queue() + " " + u.kind();
      Long last = warnedAt.get(key);
      if (last != null && now - last < config.warnInterval().toNanos()) {
        continue;
      }
      warnedAt.put(key, now);
      warned.add(u);
      log.warn("pgtask: {} due task(s) of kind {} in queue {} have no handler in any live worker of that queue; "
          + "they will not run until a worker with a handler for {} serves {} (see pgtask.unrunnable)",
          u.tasks(), u.kind(), u.queue(), u.kind(), u.queue());
    }
    return warned;
  }
}
