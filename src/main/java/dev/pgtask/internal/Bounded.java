package dev.pgtask.internal;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;

/** A shutdown step that may wait on a pool with nothing to give: run on a daemon thread, waited for a bounded time. */
public final class Bounded {

  private Bounded() {}

  /**
   * Runs {@code step} on a daemon thread named {@code thread} and waits at most {@code nanos} for it.
   * Returns false when it did not finish in time (it goes on, on its daemon thread); a failure of the
   * step goes to {@code onFailure}.
   */
  public static boolean run(String thread, Runnable step, long nanos, Consumer<Throwable> onFailure) {
    CompletableFuture<Void> done = CompletableFuture.runAsync(step, r -> {
      Thread t = new Thread(r, thread);
      t.setDaemon(true);
      t.start();
    });
    try {
      done.get(nanos, TimeUnit.NANOSECONDS);
    } catch (ExecutionException e) {
      onFailure.accept(e.getCause());
    } catch (TimeoutException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return true;
  }
}
