package dev.pgtask.dashboard;

import java.security.Principal;
import java.util.Map;

/**
 * One HTTP request as the dashboard's core sees it, whichever server received it.
 *
 * @param method the HTTP method, e.g. {@code GET}
 * @param basePath where the dashboard is mounted, without a trailing slash ({@code ""} at the root,
 *     e.g. {@code "/pgtask"} under an application); links are made under it
 * @param path the path below {@code basePath}, starting with {@code /}
 * @param query the query's parameters (the first value of each), decoded
 * @param form the form's parameters of a POST (urlencoded body), decoded; empty otherwise
 * @param cookies the request's cookies by name
 * @param principal who sent it as the embedding server authenticated them, or null
 */
public record DashboardRequest(String method, String basePath, String path, Map<String, String> query,
    Map<String, String> form, Map<String, String> cookies, Principal principal) {

  /** Validates and copies. */
  public DashboardRequest {
    if (method == null || path == null || !path.startsWith("/")) {
      throw new IllegalArgumentException("a dashboard request needs a method and a path starting with /: "
          + method + " " + path);
    }
    basePath = basePath == null || basePath.equals("/") ? "" : basePath.endsWith("/")
        ? basePath.substring(0, basePath.length() - 1) : basePath;
    query = query == null ? Map.of() : Map.copyOf(query);
    form = form == null ? Map.of() : Map.copyOf(form);
    cookies = cookies == null ? Map.of() : Map.copyOf(cookies);
  }
}
