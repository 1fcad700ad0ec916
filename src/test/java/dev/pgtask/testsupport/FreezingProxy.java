package dev.pgtask.testsupport;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A TCP proxy to the test server that can freeze one connection the way a frozen pooler or a network
 * black hole does: once armed ({@link #freezeAtCommit}), the next client-to-server message that
 * contains {@code COMMIT} (after one containing the given marker, on the same connection, when a
 * marker is given) is swallowed, and from then on that connection forwards nothing in either
 * direction while both of its sockets stay open. Other connections, and new ones, pass through.
 * {@link #freezeAt} freezes at any other text.
 */
public final class FreezingProxy implements AutoCloseable {

  private final ServerSocket server;
  private final String targetHost;
  private final int targetPort;
  private final List<Socket> sockets = new CopyOnWriteArrayList<>();
  // the armed freeze: {marker or null, trigger text}; taken by the connection that freezes
  private final AtomicReference<String[]> armed = new AtomicReference<>();
  private final AtomicInteger frozen = new AtomicInteger();
  private final AtomicInteger answersLost = new AtomicInteger();
  private volatile boolean closed;

  private FreezingProxy(String targetHost, int targetPort) throws IOException {
    this.targetHost = targetHost;
    this.targetPort = targetPort;
    this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread t = new Thread(this::accept, "freezing-proxy-accept");
    t.setDaemon(true);
    t.start();
  }

  /** A proxy on a free local port to {@code host:port}. */
  public static FreezingProxy to(String host, int port) throws IOException {
    return new FreezingProxy(host, port);
  }

  /** The local port to connect to. */
  public int port() {
    return server.getLocalPort();
  }

  /**
   * Arms the freeze: the next client message containing {@code COMMIT}, on a connection that sent a
   * message containing {@code marker} since its last COMMIT (any connection when {@code marker} is
   * null), is swallowed and its connection frozen. A statement the driver has prepared on the server
   * is sent without its text: match a bound value (a worker id) instead.
   */
  public void freezeAtCommit(String marker) {
    armed.set(new String[] {marker, "COMMIT"});
  }

  /** Arms the freeze at the next client message containing {@code text} (swallowed too). */
  public void freezeAt(String text) {
    armed.set(new String[] {null, text});
  }

  /**
   * Arms a lost answer: the next client message containing {@code COMMIT}, on a connection that sent
   * a message containing {@code marker} since its last COMMIT, reaches the server, but nothing the
   * server sends afterwards reaches the client, and the client's socket is closed: the COMMIT is
   * done and its answer lost, as when a network breaks at that moment.
   */
  public void loseAnswerAtCommit(String marker) {
    armed.set(new String[] {marker, "COMMIT", "lose-answer"});
  }

  /** COMMIT answers lost so far ({@link #loseAnswerAtCommit}). */
  public int answersLost() {
    return answersLost.get();
  }

  /** Connections frozen so far. */
  public int frozenCount() {
    return frozen.get();
  }

  private void accept() {
    while (!closed) {
      try {
        Socket client = server.accept();
        Socket upstream = new Socket();
        upstream.connect(new InetSocketAddress(targetHost, targetPort), 5_000);
        sockets.add(client);
        sockets.add(upstream);
        Connection c = new Connection();
        start(() -> c.pump(client, upstream, true));
        start(() -> c.pump(upstream, client, false));
      } catch (IOException e) {
        if (closed) {
          return;
        }
      }
    }
  }

  private static void start(Runnable r) {
    Thread t = new Thread(r, "freezing-proxy-pump");
    t.setDaemon(true);
    t.start();
  }

  /** One proxied connection: both directions stop together. */
  private final class Connection {
    volatile boolean frozenHere;
    volatile boolean answerLostHere;
    volatile boolean sawMarker;
    // the tail of the client's stream, so that a text split across two reads is still found
    String tail = "";

    void pump(Socket from, Socket to, boolean clientToServer) {
      byte[] buf = new byte[16 * 1024];
      try {
        // the streams are not closed here: closing one closes its socket, and a frozen connection
        // keeps both sockets open whatever either side does
        InputStream in = from.getInputStream();
        OutputStream out = to.getOutputStream();
        int n;
        while ((n = in.read(buf)) >= 0) {
          if (clientToServer && !frozenHere) {
            String text = tail + new String(buf, 0, n, StandardCharsets.ISO_8859_1);
            tail = text.length() > 64 ? text.substring(text.length() - 64) : text;
            String[] a = armed.get();
            if (a != null && a[0] != null && text.contains(a[0])) {
              sawMarker = true;
            }
            if (a != null && (a[0] == null || sawMarker) && text.contains(a[1]) && armed.compareAndSet(a, null)) {
              if (a.length > 2) {
                // the COMMIT goes through; its answer, and all after it, is lost with the client's socket
                out.write(buf, 0, n);
                out.flush();
                answerLostHere = true;
                answersLost.incrementAndGet();
                closeQuietly(from);
                continue;
              }
              frozenHere = true;
              frozen.incrementAndGet();
            } else if (text.contains("COMMIT")) {
              sawMarker = false; // the marker counts within one transaction
              tail = "";
            }
          }
          if (frozenHere || (answerLostHere && !clientToServer)) {
            continue; // a black hole: read and drop, send nothing, keep both sockets open
          }
          out.write(buf, 0, n);
          out.flush();
        }
      } catch (IOException e) {
        // the other side closed
      } finally {
        if (answerLostHere && clientToServer) {
          // the server side stays open for a while, so that the server runs the COMMIT it received
          // before it sees the connection end
          Socket upstream = to;
          start(() -> {
            try {
              Thread.sleep(2_000); // the fault's duration (the server side kept open), not a wait for a condition
            } catch (InterruptedException ignored) {
              // closing now
            }
            closeQuietly(upstream);
          });
        } else if (!frozenHere) {
          closeQuietly(from);
          closeQuietly(to);
        }
      }
    }
  }

  private static void closeQuietly(Socket s) {
    try {
      s.close();
    } catch (IOException ignored) {
      // closing anyway
    }
  }

  @Override
  public void close() {
    closed = true;
    try {
      server.close();
    } catch (IOException ignored) {
      // closing anyway
    }
    for (Socket s : sockets) {
      closeQuietly(s);
    }
  }
}
