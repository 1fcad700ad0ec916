package dev.pgtask.internal.wakeup;

import java.util.Collection;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;

/**
 * Wake-ups inside one JVM: an enqueue that {@code PgTask} committed itself wakes the workers of
 * this process that run over the same {@code DataSource} object and serve the task's queue, at
 * once, instead of after the notification's trip through the server (about a millisecond and a
 * half on the benchmark machine, see docs/benchmarks.md).
 *
 * <p>Only ever an early wake-up: the {@code NOTIFY} of the same commit still reaches every worker,
 * those of this process included, so nothing depends on this path. Matching by object identity
 * keeps it from waking a worker of another database: two different DataSource objects are never
 * assumed to reach the same one.
 */
public final class LocalWake {

  private record Registration(DataSource dataSource, Set<String> queues, Runnable wake) {}

  private static final CopyOnWriteArrayList<Registration> REGISTRATIONS = new CopyOnWriteArrayList<>();

  private LocalWake() {}

  /** Registers a worker; the returned handle removes it. */
  public static Runnable register(DataSource dataSource, Collection<String> queues, Runnable wake) {
    Registration r = new Registration(dataSource, Set.copyOf(queues), wake);
    REGISTRATIONS.add(r);
    return () -> REGISTRATIONS.remove(r);
  }

  /** Called after a commit that made a task of {@code queue} claimable now. */
  public static void committed(DataSource dataSource, String queue) {
    for (Registration r : REGISTRATIONS) {
      if (r.dataSource == dataSource && r.queues.contains(queue)) {
        r.wake.run();
      }
    }
  }
}
