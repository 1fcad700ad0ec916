package dev.pgtask.internal.maintenance;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgtask.NewTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.internal.sql.ClaimQueries;
import dev.pgtask.testsupport.QueueDatabase;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The maintenance lease in-process: one holder at a time, taken over only once expired, and a
 * holder whose lease another worker took (a frozen leader that woke up) runs no pass.
 */
class MaintenanceLeaseTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("maintenance_lease", 4);

  @BeforeEach
  void clean() throws Exception {
    queue.sql().exec("DELETE FROM pgtask.task");
    queue.sql().exec("UPDATE pgtask.maintenance_lease SET holder = NULL, lease_until = '-infinity'");
  }

  private Maintenance maintenance(String workerId, Duration rescueInterval) {
    PgTaskWorker w = PgTaskWorker.builder(queue.pool()).workerId(workerId).concurrency(1)
        .rescueInterval(rescueInterval).handler("test.task", (c, p) -> { }).build();
    return Maintenance.standalone(dev.pgtask.internal.WorkerAccess.config(w));
  }

  private String holder() throws Exception {
    return queue.sql().text("SELECT worker FROM pgtask.maintenance_leader WHERE live");
  }

  private long orphan() throws Exception {
    long id = queue.pgtask().enqueue(NewTask.of("test.task", null));
    assertThat(ClaimQueries.claimAvailable(queue.pool(), List.of("default"), List.of("test.task"), 1, "ghost",
        Duration.ofSeconds(30)).tasks()).hasSize(1);
    queue.sql().exec("UPDATE pgtask.task SET lease_until = now() - interval '1 second' WHERE id = " + id);
    return id;
  }

  private String state(long id) throws Exception {
    return queue.sql().text("SELECT state FROM pgtask.task WHERE id = " + id);
  }

  private void expireLease() throws Exception {
    // the holder froze past its lease: its expiry moved into the past
    queue.sql().exec("UPDATE pgtask.maintenance_lease SET lease_until = clock_timestamp() - interval '1 second'");
  }

  @Test
  void oneHolderAtATimeATakerRescuesAtOnceAndALeaderWhoseLeaseWasTakenRunsNoPass() throws Exception {
    // a's rescue round is due at every tick (1 ms): whether it runs depends on the lease only
    Maintenance a = maintenance("lease-a", Duration.ofMillis(1));
    Maintenance b = maintenance("lease-b", PgTaskWorker.DEFAULT_RESCUE_INTERVAL);
    Maintenance c = maintenance("lease-c", PgTaskWorker.DEFAULT_RESCUE_INTERVAL);
    b.runNow(Tick.class);
    c.runNow(Tick.class);
    assertThat(b.leads()).as("b leads after the first tick").isTrue();
    assertThat(c.leads()).as("c leads while b's lease is live").isFalse();
    assertThat(holder()).isEqualTo("lease-b");

    long first = orphan();
    expireLease();
    a.runNow(Tick.class);
    assertThat(a.leads()).as("a leads after b's lease expired").isTrue();
    assertThat(state(first)).as("the orphan after a took the lease (its rescue round runs at once)").isEqualTo("retryable");

    queue.sql().exec("DELETE FROM pgtask.task"); // the next claim takes the next orphan, not this one
    expireLease();
    c.runNow(Tick.class);
    assertThat(c.leads()).as("c leads after a's lease expired").isTrue();
    long second = orphan();
    // a wakes up still believing it leads: its tick's transaction finds the lease taken and rescues nothing
    assertThat(a.leads()).as("a's belief before its tick").isTrue();
    a.runNow(Tick.class);
    assertThat(a.leads()).as("a leads after its tick").isFalse();
    assertThat(state(second)).as("the orphan after the fenced-out tick of a").isEqualTo("running");
    assertThat(holder()).isEqualTo("lease-c");
    assertThat(queue.sql().count("SELECT term FROM pgtask.maintenance_leader")).as("terms: b, a, c").isEqualTo(3);
  }
}
