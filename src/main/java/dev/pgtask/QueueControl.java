package dev.pgtask;

import dev.pgtask.internal.wakeup.LocalWake;
import dev.pgtask.internal.sql.QueueControlQueries;
import dev.pgtask.ops.PgTaskOperations;
import java.util.List;
import javax.sql.DataSource;
import org.jooq.DSLContext;

/** {@link PgTask}'s queue control and diagnosis: pause and resume a queue, list paused queues, explain a task. */
final class QueueControl {

  private final DataSource dataSource;
  private final DSLContext dsl;

  QueueControl(DataSource dataSource, DSLContext dsl) {
    this.dataSource = dataSource;
    this.dsl = dsl;
  }

  boolean pause(String queue) {
    return "paused".equals(Failures.call("pause queue", () -> QueueControlQueries.pauseQueue(dsl, queue)));
  }

  boolean resume(String queue) {
    boolean resumed = "resumed".equals(Failures.call("resume queue", () -> QueueControlQueries.resumeQueue(dsl, queue)));
    if (resumed) {
      LocalWake.committed(dataSource, queue); // the commit's NOTIFY follows anyway
    }
    return resumed;
  }

  List<PausedQueue> paused() {
    return Failures.call("list paused queues", () -> PgTaskOperations.create(dataSource).pausedQueues().stream()
        .map(r -> new PausedQueue(r.queue(), r.pausedAt(), r.pausedBy(), r.due(), r.queued())).toList());
  }

  TaskExplanation explain(long taskId) {
    return Failures.call("explain", () -> PgTaskOperations.create(dataSource).explain(taskId));
  }
}
