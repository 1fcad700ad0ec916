package dev.pgtask.testsupport;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * What the suite's logging (slf4j-simple, on {@code System.err}) prints while it is open, also
 * still printed: for tests that wait for an event that a worker only shows in its log.
 */
public final class LogCapture implements AutoCloseable {

  private final PrintStream original;
  private final ByteArrayOutputStream captured = new ByteArrayOutputStream();

  private LogCapture() {
    original = System.err;
    System.setErr(new PrintStream(new OutputStream() {
      @Override
      public void write(int b) {
        synchronized (captured) {
          captured.write(b);
        }
        original.write(b);
      }

      @Override
      public void write(byte[] b, int off, int len) {
        synchronized (captured) {
          captured.write(b, off, len);
        }
        original.write(b, off, len);
      }
    }, true, StandardCharsets.UTF_8));
  }

  /** Starts capturing. */
  public static LogCapture start() {
    return new LogCapture();
  }

  /** What was logged since {@link #start()}. */
  public String text() {
    synchronized (captured) {
      return captured.toString(StandardCharsets.UTF_8);
    }
  }

  @Override
  public void close() {
    System.setErr(original);
  }
}
