package dev.pgtask.internal.executor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.Test;

/**
 * The one writer of a task's state, without a database: every move goes through
 * {@code LocalTask.moveTo}, only along the lifecycle's edges ({@link LocalTask.State#mayBecome});
 * a move off them is refused and changes nothing; and a task is let go ({@code DONE}) once,
 * whichever threads race to let it go.
 */
class LocalTaskStateTest {

  @Test
  void aTransactionalTaskGoesFromWaitingThroughItsLockAndHandlerToDone() {
    LocalTask t = UnitConfigs.task(1, 1);
    assertThat(t.state()).isEqualTo(LocalTask.State.WAITING);
    t.locked();
    assertThat(t.state()).isEqualTo(LocalTask.State.LOCKED);
    t.running(null, null, null, null, null);
    assertThat(t.state()).isEqualTo(LocalTask.State.RUNNING);
    t.finishing();
    assertThat(t.state()).isEqualTo(LocalTask.State.FINISHING);
    assertThat(t.done()).isTrue();
    assertThat(t.state()).isEqualTo(LocalTask.State.DONE);
  }

  @Test
  void aPlainTaskOrAnAdoptedHeadStartsFromWaiting() {
    LocalTask t = UnitConfigs.task(1, 1);
    t.running(null, null, null, null, null);
    assertThat(t.state()).isEqualTo(LocalTask.State.RUNNING);
  }

  @Test
  void aTaskWhoseTransactionEndedWaitsAgainFromLockedOrFinishing() {
    LocalTask locked = UnitConfigs.task(1, 1);
    locked.locked();
    locked.requeued();
    assertThat(locked.state()).isEqualTo(LocalTask.State.WAITING);

    LocalTask finished = UnitConfigs.task(2, 1);
    finished.locked();
    finished.running(null, null, null, null, null);
    finished.finishing();
    finished.requeued();
    assertThat(finished.state()).isEqualTo(LocalTask.State.WAITING);
    finished.locked();
    assertThat(finished.state()).as("and runs again").isEqualTo(LocalTask.State.LOCKED);
  }

  @Test
  void aMoveOffTheLifecycleIsRefusedAndChangesNothing() {
    LocalTask running = UnitConfigs.task(1, 1);
    running.running(null, null, null, null, null);
    assertThatThrownBy(running::requeued).as("a running handler's task cannot wait again")
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("cannot become WAITING from RUNNING");
    assertThatThrownBy(running::locked).isInstanceOf(IllegalStateException.class);
    assertThat(running.state()).isEqualTo(LocalTask.State.RUNNING);

    LocalTask waiting = UnitConfigs.task(2, 1);
    assertThatThrownBy(waiting::finishing).as("no handler ran").isInstanceOf(IllegalStateException.class);
    assertThat(waiting.state()).isEqualTo(LocalTask.State.WAITING);
  }

  @Test
  void aTaskLetGoStaysDone() {
    LocalTask t = UnitConfigs.task(1, 1);
    t.locked();
    assertThat(t.done()).isTrue();
    assertThat(t.done()).as("a second let-go changes nothing").isFalse();
    assertThatThrownBy(t::locked).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> t.running(null, null, null, null, null)).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(t::requeued).isInstanceOf(IllegalStateException.class);
    assertThat(t.state()).isEqualTo(LocalTask.State.DONE);
  }

  @Test
  void theEdgesAreExactlyTheLifecycle() {
    for (LocalTask.State from : LocalTask.State.values()) {
      for (LocalTask.State to : LocalTask.State.values()) {
        boolean expected = switch (to) {
          case WAITING -> from == LocalTask.State.WAITING || from == LocalTask.State.LOCKED
              || from == LocalTask.State.FINISHING;
          case LOCKED -> from == LocalTask.State.WAITING;
          case RUNNING -> from == LocalTask.State.WAITING || from == LocalTask.State.LOCKED;
          case FINISHING -> from == LocalTask.State.RUNNING;
          case DONE -> from != LocalTask.State.DONE;
        };
        assertThat(from.mayBecome(to)).as(from + " -> " + to).isEqualTo(expected);
      }
    }
  }

  @RepeatedTest(20)
  void ofThreadsRacingToLetATaskGoExactlyOneDoes() throws Exception {
    // the executor thread, the completer, the shutdown's release and flush threads may all try
    LocalTask t = UnitConfigs.task(1, 1);
    t.running(null, null, null, null, null);
    t.finishing();
    int threads = 6;
    CyclicBarrier start = new CyclicBarrier(threads);
    AtomicInteger letGo = new AtomicInteger();
    List<Thread> racing = new ArrayList<>();
    for (int i = 0; i < threads; i++) {
      Thread th = new Thread(() -> {
        try {
          start.await();
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
        if (t.done()) {
          letGo.incrementAndGet();
        }
      });
      racing.add(th);
      th.start();
    }
    for (Thread th : racing) {
      th.join();
    }
    assertThat(letGo.get()).isEqualTo(1);
    assertThat(t.state()).isEqualTo(LocalTask.State.DONE);
    assertThat(t.requestStop(LocalTask.Stop.SHUTDOWN)).as("a stop after the let-go").isFalse();
  }
}
