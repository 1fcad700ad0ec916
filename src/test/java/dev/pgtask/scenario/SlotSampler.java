package dev.pgtask.scenario;

import dev.pgtask.testsupport.TestDatabase;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Samples one limit's {@code slots_held} ({@code pgtask.limits}, from {@code pg_locks}) every 10 ms
 * on its own connection, keeping the latest and the largest value: the meter of the slots that
 * killed attempts held (their executions commit nothing, so the committed overlap cannot see them).
 * The largest is -1 when a sample failed.
 */
final class SlotSampler implements AutoCloseable {

  private final AtomicLong max = new AtomicLong();
  private final AtomicLong current = new AtomicLong();
  private final Thread thread;

  private SlotSampler(TestDatabase db, String scope, String key) {
    thread = new Thread(() -> {
      try (var c = db.connect(); var ps = c.prepareStatement(
          "SELECT slots_held FROM pgtask.limits WHERE scope = ? AND key = ?")) {
        ps.setString(1, scope);
        ps.setString(2, key);
        while (!Thread.currentThread().isInterrupted()) {
          try (var rs = ps.executeQuery()) {
            if (rs.next()) {
              current.set(rs.getLong(1));
              max.accumulateAndGet(rs.getLong(1), Math::max);
            }
          }
          Thread.sleep(10); // the sampling interval
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } catch (Exception e) {
        max.set(-1);
      }
    }, "slot-sampler");
  }

  /** Starts sampling the limit of {@code scope} and {@code key}. */
  static SlotSampler start(TestDatabase db, String scope, String key) {
    SlotSampler s = new SlotSampler(db, scope, key);
    s.thread.start();
    return s;
  }

  /** The slots held at the last sample. */
  long current() {
    return current.get();
  }

  /** The most slots held at one sample so far (-1: a sample failed). */
  long max() {
    return max.get();
  }

  @Override
  public void close() throws InterruptedException {
    thread.interrupt();
    thread.join();
  }
}
