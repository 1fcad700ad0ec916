package dev.pgtask.dashboard;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * A {@link Dashboard} served by the JDK's {@code com.sun.net.httpserver} (no dependency): a few
 * threads, request bodies up to {@link #MAX_BODY} bytes. {@link #close()} stops it.
 */
public final class DashboardServer implements AutoCloseable {

  /** The largest form a POST may send. */
  public static final int MAX_BODY = 64 * 1024;

  private final HttpServer server;
  private final ExecutorService threads;

  private DashboardServer(HttpServer server, ExecutorService threads) {
    this.server = server;
    this.threads = threads;
  }

  static DashboardServer start(Dashboard dashboard, String bind, int port) {
    HttpServer server;
    try {
      server = HttpServer.create(new InetSocketAddress(bind, port), 50);
    } catch (IOException e) {
      throw new UncheckedIOException("pgtask dashboard: cannot listen on " + bind + ":" + port + ": " + e.getMessage(), e);
    }
    ExecutorService threads = Executors.newFixedThreadPool(4, r -> {
      Thread t = new Thread(r, "pgtask-dashboard");
      t.setDaemon(true);
      return t;
    });
    server.setExecutor(threads);
    server.createContext("/", exchange -> serve(dashboard, exchange));
    server.start();
    return new DashboardServer(server, threads);
  }

  /** Where it listens (the port chosen when 0 was asked for). */
  public InetSocketAddress address() {
    return server.getAddress();
  }

  /** The port it listens on. */
  public int port() {
    return server.getAddress().getPort();
  }

  /** Its address as a URL, e.g. {@code http://127.0.0.1:8080/}. */
  public String url() {
    String host = server.getAddress().getAddress().getHostAddress();
    return "http://" + (host.contains(":") ? "[" + host + "]" : host) + ":" + port() + "/";
  }

  /** Stops listening and waits up to a second for the requests being answered. */
  @Override
  public void close() {
    server.stop(1);
    threads.shutdown();
    try {
      threads.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static void serve(Dashboard dashboard, HttpExchange exchange) throws IOException {
    try (exchange) {
      byte[] body;
      try (InputStream in = exchange.getRequestBody()) {
        body = in.readNBytes(MAX_BODY + 1);
      }
      DashboardResponse r;
      if (body.length > MAX_BODY) {
        r = new DashboardResponse(413, "text/plain; charset=utf-8",
            "request body too large".getBytes(StandardCharsets.UTF_8), Map.of());
      } else {
        try {
          r = dashboard.handle(request(exchange, body));
        } catch (IllegalArgumentException e) {
          r = new DashboardResponse(400, "text/plain; charset=utf-8",
              ("bad request: " + e.getMessage()).getBytes(StandardCharsets.UTF_8), Map.of());
        }
      }
      r.headers().forEach((k, v) -> exchange.getResponseHeaders().add(k, v));
      exchange.getResponseHeaders().set("Content-Type", r.contentType());
      boolean head = "HEAD".equals(exchange.getRequestMethod());
      exchange.sendResponseHeaders(r.status(), head || r.body().length == 0 ? -1 : r.body().length);
      if (!head && r.body().length > 0) {
        try (OutputStream out = exchange.getResponseBody()) {
          out.write(r.body());
        }
      }
    }
  }

  /** The exchange as the core's request; a malformed query or form throws IllegalArgumentException. */
  private static DashboardRequest request(HttpExchange exchange, byte[] body) {
    String method = exchange.getRequestMethod();
    String contentType = exchange.getRequestHeaders().getFirst("Content-Type");
    Map<String, String> form = "POST".equals(method) && contentType != null
        && contentType.startsWith("application/x-www-form-urlencoded")
        ? parse(new String(body, StandardCharsets.UTF_8)) : Map.of();
    return new DashboardRequest(method, "", exchange.getRequestURI().getPath(),
        parse(exchange.getRequestURI().getRawQuery()), form, cookies(exchange.getRequestHeaders().get("Cookie")),
        exchange.getPrincipal());
  }

  /** {@code a=1&b=x%20y} decoded; the first value of a name wins. */
  static Map<String, String> parse(String encoded) {
    Map<String, String> m = new HashMap<>();
    if (encoded == null || encoded.isEmpty()) {
      return m;
    }
    for (String pair : encoded.split("&")) {
      int eq = pair.indexOf('=');
      String k = URLDecoder.decode(eq < 0 ? pair : pair.substring(0, eq), StandardCharsets.UTF_8);
      String v = eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
      m.putIfAbsent(k, v);
    }
    return m;
  }

  static Map<String, String> cookies(List<String> headers) {
    Map<String, String> m = new HashMap<>();
    if (headers == null) {
      return m;
    }
    for (String h : headers) {
      for (String c : h.split(";")) {
        int eq = c.indexOf('=');
        if (eq > 0) {
          m.putIfAbsent(c.substring(0, eq).strip(), c.substring(eq + 1).strip());
        }
      }
    }
    return m;
  }
}
