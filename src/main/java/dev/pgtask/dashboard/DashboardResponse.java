package dev.pgtask.dashboard;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The dashboard's answer to one request, for whichever server sends it.
 *
 * @param status the HTTP status
 * @param contentType the body's content type
 * @param body the body
 * @param headers further headers ({@code Set-Cookie}, {@code Location}, the security headers)
 */
public record DashboardResponse(int status, String contentType, byte[] body, Map<String, String> headers) {

  /** Copies. */
  public DashboardResponse {
    body = body == null ? new byte[0] : body;
    headers = Map.copyOf(headers == null ? Map.of() : headers);
  }

  /** The body as text (UTF-8). */
  public String text() {
    return new String(body, StandardCharsets.UTF_8);
  }

  static DashboardResponse html(int status, String html, Map<String, String> headers) {
    Map<String, String> h = new LinkedHashMap<>(SECURITY_HEADERS);
    h.putAll(headers);
    return new DashboardResponse(status, "text/html; charset=utf-8", html.getBytes(StandardCharsets.UTF_8), h);
  }

  /**
   * Sent with every page: no script of any origin, styles and images from the dashboard only, forms
   * post to the dashboard only, never framed, not cached, no content sniffing, no referrer.
   */
  static final Map<String, String> SECURITY_HEADERS = Map.of(
      "Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
          + "frame-ancestors 'none'; base-uri 'none'",
      "X-Content-Type-Options", "nosniff",
      "X-Frame-Options", "DENY",
      "Referrer-Policy", "no-referrer",
      "Cache-Control", "no-store");
}
