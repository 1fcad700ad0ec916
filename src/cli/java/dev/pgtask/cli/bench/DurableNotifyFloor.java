package dev.pgtask.cli.bench;

import com.zaxxer.hikari.HikariDataSource;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The floor an enqueue pays before another process can know of it ({@code notify_durable_p50_ms}):
 * one connection INSERTs one row into a bare table and NOTIFYs in the same transaction, then
 * commits; a LISTENing connection in another JVM ({@link NotifyReceiver}, started from this
 * process's own class path) receives it. Timed from just before the {@code COMMIT} to receipt. The
 * insert matters: a transaction that wrote a row waits for the WAL flush before its notification
 * goes out, as an enqueue's does; one that only notifies does not.
 *
 * <p>The receipt instant is the receiver's {@code System.nanoTime()}, which on Linux is the
 * system-wide monotonic clock ({@code CLOCK_MONOTONIC}) and so comparable between two processes of
 * one host; every sample is checked to lie between the sender's instant before the {@code COMMIT}
 * and the sender's reading of the receiver's line, and the measurement fails when one does not.
 */
final class DurableNotifyFloor {

  static final String CHANNEL = "pgtask_bench_durable";
  private static final int WARM_UP = 20;

  private final BenchDatabase db;

  DurableNotifyFloor(BenchDatabase db) {
    this.db = db;
  }

  /** {@code samples} round trips (after {@value #WARM_UP} more of warm-up), 5 ms apart; returns {p50, p99} in ms. */
  double[] measure(HikariDataSource pool, int samples) throws Exception {
    try (Connection c = pool.getConnection(); Statement st = c.createStatement()) {
      st.execute("CREATE SCHEMA IF NOT EXISTS pgtask_bench");
      st.execute("DROP TABLE IF EXISTS pgtask_bench.notify_durable");
      st.execute("CREATE TABLE pgtask_bench.notify_durable (id bigserial PRIMARY KEY, payload text NOT NULL)");
    }
    Process receiver = start();
    try (BufferedReader lines = new BufferedReader(new InputStreamReader(receiver.getInputStream(), StandardCharsets.UTF_8));
        Connection send = pool.getConnection();
        PreparedStatement notify = send.prepareStatement("WITH w AS (INSERT INTO pgtask_bench.notify_durable (payload) "
            + "VALUES (?) RETURNING payload) SELECT pg_notify('" + CHANNEL + "', payload) FROM w")) {
      String ready = lines.readLine();
      if (!"ready".equals(ready)) {
        throw new IllegalStateException("the notification receiver process did not start (it said " + ready
            + "; its errors are above)");
      }
      send.setAutoCommit(false);
      List<Double> ms = new ArrayList<>();
      for (int i = 0; i < samples + WARM_UP; i++) {
        String payload = Integer.toString(i);
        notify.setString(1, payload);
        notify.executeQuery().close();
        long t0 = System.nanoTime();
        send.commit();
        long received = receipt(lines, payload);
        long read = System.nanoTime();
        if (received < t0 || received > read) {
          throw new IllegalStateException("the receiver's clock is not this process's: receipt "
              + (received - t0) + " ns after the COMMIT, read " + (read - t0) + " ns after it");
        }
        if (i >= WARM_UP) {
          ms.add((received - t0) / 1e6);
        }
        Thread.sleep(5);
      }
      send.setAutoCommit(true);
      Collections.sort(ms);
      return new double[] {Stat.quantile(ms, 0.50), Stat.quantile(ms, 0.99)};
    } finally {
      receiver.getOutputStream().close(); // its stdin closed: it exits
      if (!receiver.waitFor(5, TimeUnit.SECONDS)) {
        receiver.destroy();
        receiver.waitFor(5, TimeUnit.SECONDS);
      }
    }
  }

  /** The receiver's instant for {@code payload}, read from its lines. */
  private static long receipt(BufferedReader lines, String payload) throws Exception {
    while (true) {
      String line = lines.readLine();
      if (line == null) {
        throw new IllegalStateException("the notification receiver process ended (its errors are above)");
      }
      if (line.equals("none")) {
        throw new IllegalStateException("the durable notification floor's NOTIFY did not arrive within 10 s");
      }
      int space = line.indexOf(' ');
      if (line.substring(0, space).equals(payload)) {
        return Long.parseLong(line.substring(space + 1));
      }
    }
  }

  /** The receiver JVM, started from this JVM's own class path, its driver properties sent on stdin. */
  private Process start() throws Exception {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    ProcessBuilder pb = new ProcessBuilder(java, "-Xmx64m", "-XX:+UseSerialGC", "-cp", System.getProperty("java.class.path"),
        NotifyReceiver.class.getName(), db.url(), CHANNEL);
    pb.redirectError(ProcessBuilder.Redirect.INHERIT);
    Process p = pb.start();
    StringWriter props = new StringWriter();
    db.props().store(props, null);
    OutputStream stdin = p.getOutputStream();
    stdin.write((Base64.getEncoder().encodeToString(props.toString().getBytes(StandardCharsets.UTF_8)) + "\n")
        .getBytes(StandardCharsets.UTF_8));
    stdin.flush(); // left open: its end tells the receiver to exit
    return p;
  }
}
