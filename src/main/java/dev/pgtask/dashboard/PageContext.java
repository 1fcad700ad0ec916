package dev.pgtask.dashboard;

import dev.pgtask.PgTask;
import dev.pgtask.ops.PgTaskOperations;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * What a page needs for one request: the reads ({@link PgTaskOperations}, bounded read-only
 * transactions), the actions ({@link PgTask}), the request, whether an action is allowed, and the
 * session's CSRF token for the action forms.
 */
final class PageContext {

  final DashboardRequest request;
  final PgTaskOperations ops;
  final PgTask pgtask;
  final int pageSize;
  private final DashboardAccess access;
  private final Csrf csrf;

  PageContext(DashboardRequest request, PgTaskOperations ops, PgTask pgtask, DashboardAccess access, Csrf csrf,
      int pageSize) {
    this.request = request;
    this.ops = ops;
    this.pgtask = pgtask;
    this.access = access;
    this.csrf = csrf;
    this.pageSize = pageSize;
  }

  /** Whether this request may perform {@code action}. */
  boolean allows(DashboardAction action) {
    return access.allows(request, action);
  }

  /** Whether any action at all is allowed (the layout says "read-only" otherwise). */
  boolean allowsAny() {
    for (DashboardAction a : DashboardAction.values()) {
      if (allows(a)) {
        return true;
      }
    }
    return false;
  }

  /** A link to {@code path} (below the mount point) with query parameters, pairs of name and value; null values left out. */
  String url(String path, String... params) {
    StringBuilder b = new StringBuilder(request.basePath()).append(path);
    char sep = '?';
    for (int i = 0; i + 1 < params.length; i += 2) {
      if (params[i + 1] != null && !params[i + 1].isEmpty()) {
        b.append(sep).append(params[i]).append('=').append(encode(params[i + 1]));
        sep = '&';
      }
    }
    return b.toString();
  }

  /** A path segment from a value (a queue or schedule name). */
  static String segment(String value) {
    return encode(value).replace("+", "%20");
  }

  static String encode(String value) {
    return URLEncoder.encode(value, StandardCharsets.UTF_8);
  }

  /**
   * An action's form (a POST to {@code path} with the CSRF token and {@code hidden} fields) with one
   * button, only when {@code action} is allowed; nothing otherwise.
   */
  void actionForm(Html out, DashboardAction action, String path, String label, Map<String, String> hidden) {
    if (!allows(action)) {
      return;
    }
    out.open("form", "method", "post", "action", url(path), "class", "inline");
    out.open("input", "type", "hidden", "name", Csrf.FIELD, "value", csrf.token());
    for (Map.Entry<String, String> h : hidden.entrySet()) {
      if (h.getValue() != null) {
        out.open("input", "type", "hidden", "name", h.getKey(), "value", h.getValue());
      }
    }
    out.open("button", "type", "submit", "name", "do", "value", action.name().toLowerCase(java.util.Locale.ROOT))
        .text(label).close("button").close("form");
  }

  /** The hidden CSRF field, for forms a page builds itself. */
  void csrfField(Html out) {
    out.open("input", "type", "hidden", "name", Csrf.FIELD, "value", csrf.token());
  }
}
