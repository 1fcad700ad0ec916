package dev.pgtask.internal.wakeup;

import dev.pgtask.internal.sql.CompletionQueries;
import java.util.List;

/**
 * A worker's own hand-offs wake only itself. The statement that completes a worker's tasks names
 * its queues ({@link #ownQueues}, the transaction-local {@code pgtask.worker_queues}); the hand-off
 * triggers then send no {@code <queue>} notification for what they make claimable in those queues
 * (db/R__02a_wakeup.sql), and after the commit this worker claims it itself ({@link #committed}),
 * with the spill ({@link Spills}) in case it cannot take all of it. A stopping worker claims
 * nothing more: its hand-offs notify the other workers.
 *
 * <p>Called by the executor threads when they commit (BatchCommit).
 */
public final class HandOffWake {

  private final String ownQueues;
  private final Spills spills;
  private final WakeSignal signal;

  HandOffWake(List<String> queues, Spills spills, WakeSignal signal) {
    this.ownQueues = CompletionQueries.workerQueues(queues);
    this.spills = spills;
    this.signal = signal;
  }

  /**
   * {@code pgtask.worker_queues} for a completion statement of this worker: its queues, or "" (every
   * hand-off notifies) while it is {@code stopping}.
   */
  public String ownQueues(boolean stopping) {
    return stopping ? "" : ownQueues;
  }

  /**
   * A commit whose completions were sent with {@code own} ({@link #ownQueues}) returned: when
   * {@code tenantTaskEnded} (a tenant's task stopped running, so a next one may be claimable), the
   * commit sent no notification for it in this worker's queues, so claim (with the spill). Call
   * before the tasks' slots are freed, so that the claim those free carries the spill.
   */
  public void committed(String own, boolean tenantTaskEnded) {
    if (!own.isEmpty() && tenantTaskEnded) {
      handedOn();
    }
  }

  /**
   * A COMMIT sent with {@code own} failed with its answer lost: it may have reached the server, and
   * what it handed on was not notified, so claim (a claim that finds nothing costs one round trip).
   */
  public void commitAnswerLost(String own) {
    if (!own.isEmpty()) {
      handedOn();
    }
  }

  private void handedOn() {
    spills.handedOn();
    signal.wake();
  }
}
