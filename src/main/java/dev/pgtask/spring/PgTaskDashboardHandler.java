package dev.pgtask.spring;

import dev.pgtask.dashboard.Dashboard;
import dev.pgtask.dashboard.DashboardRequest;
import dev.pgtask.dashboard.DashboardResponse;
import jakarta.servlet.http.Cookie;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import org.springframework.web.HttpRequestHandler;

/**
 * The dashboard's core ({@link Dashboard#handle}) as a Spring MVC handler under a path of the
 * application: the request reaches it through the {@code DispatcherServlet}, so the application's
 * servlet filters (Spring Security) run first. Only the servlet API and {@link HttpRequestHandler},
 * the same on Spring Framework 6 and 7.
 */
final class PgTaskDashboardHandler implements HttpRequestHandler {

  private final Dashboard dashboard;
  private final String path;

  PgTaskDashboardHandler(Dashboard dashboard, String path) {
    this.dashboard = dashboard;
    this.path = path;
  }

  @Override
  public void handleRequest(HttpServletRequest request, HttpServletResponse response) throws IOException {
    String base = request.getContextPath() + path;
    String uri = request.getRequestURI();
    String rest = uri.length() > base.length() ? uri.substring(base.length()) : "/";
    rest = URLDecoder.decode(rest.replace("+", "%2B"), StandardCharsets.UTF_8);
    Map<String, String> form = new HashMap<>();
    if ("POST".equals(request.getMethod())) {
      request.getParameterMap().forEach((k, v) -> form.put(k, v.length == 0 ? "" : v[0]));
    }
    Map<String, String> cookies = new HashMap<>();
    if (request.getCookies() != null) {
      for (Cookie c : request.getCookies()) {
        cookies.putIfAbsent(c.getName(), c.getValue());
      }
    }
    DashboardResponse r = dashboard.handle(new DashboardRequest(request.getMethod(), base, rest,
        query(request.getQueryString()), form, cookies, request.getUserPrincipal()));
    response.setStatus(r.status());
    r.headers().forEach(response::addHeader);
    response.setContentType(r.contentType());
    response.setContentLength(r.body().length);
    if (!"HEAD".equals(request.getMethod())) {
      response.getOutputStream().write(r.body());
    }
  }

  private static Map<String, String> query(String raw) {
    Map<String, String> m = new HashMap<>();
    if (raw == null || raw.isEmpty()) {
      return m;
    }
    for (String pair : raw.split("&")) {
      int eq = pair.indexOf('=');
      m.putIfAbsent(URLDecoder.decode(eq < 0 ? pair : pair.substring(0, eq), StandardCharsets.UTF_8),
          eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8));
    }
    return m;
  }
}
