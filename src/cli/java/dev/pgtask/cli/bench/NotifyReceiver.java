package dev.pgtask.cli.bench;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.util.Base64;
import java.util.Properties;

/**
 * The receiving side of the durable notification floor ({@link DurableNotifyFloor}), run as a JVM
 * of its own: a LISTENing connection blocked in pgjdbc's {@code getNotifications}, as a worker in
 * another process waits. Started with the JDBC URL and the channel as arguments; reads the driver
 * properties (which may hold a password, so not on the command line) as one Base64 line on stdin;
 * prints {@code ready} once it listens, then one line {@code <payload> <System.nanoTime()>} per
 * notification, taken as {@code getNotifications} returns. It exits when its stdin closes (the bench
 * ended or died) and prints {@code none} when nothing arrives for 10 s.
 */
public final class NotifyReceiver {

  private NotifyReceiver() {}

  public static void main(String[] args) throws Exception {
    if (args.length != 2) {
      System.err.println("usage: NotifyReceiver JDBC_URL CHANNEL (driver properties as one Base64 line on stdin)");
      System.exit(2);
    }
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String encoded = in.readLine();
    if (encoded == null) {
      System.exit(2);
    }
    Properties props = new Properties();
    props.load(new StringReader(new String(Base64.getDecoder().decode(encoded.trim()), StandardCharsets.UTF_8)));
    props.setProperty("ApplicationName", "pgtask bench receiver");
    Thread stdinWatch = new Thread(() -> {
      try {
        while (in.read() >= 0) {
          // nothing is sent after the properties: the end of stdin ends this process
        }
      } catch (java.io.IOException e) {
        // the same: the bench is gone
      }
      System.exit(0);
    }, "stdin-watch");
    stdinWatch.setDaemon(true);
    stdinWatch.start();
    PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, StandardCharsets.UTF_8);
    try (Connection listen = DriverManager.getConnection(args[0], props)) {
      if (!args[1].matches("[a-z_]{1,63}")) {
        throw new IllegalArgumentException("channel must be lower-case letters and underscores: " + args[1]);
      }
      try (Statement st = listen.createStatement()) {
        st.execute("LISTEN " + args[1]);
      }
      org.postgresql.PGConnection pg = listen.unwrap(org.postgresql.PGConnection.class);
      out.println("ready");
      out.flush();
      while (true) {
        org.postgresql.PGNotification[] got = pg.getNotifications(10_000);
        long at = System.nanoTime();
        if (got == null || got.length == 0) {
          out.println("none");
        } else {
          for (org.postgresql.PGNotification n : got) {
            out.println(n.getParameter() + " " + at);
          }
        }
        out.flush();
      }
    }
  }
}
