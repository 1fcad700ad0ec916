package dev.pgtask.dashboard;

/** The frame of every page: head, navigation, the read-only notice, the page's body. */
final class Layout {

  private static final String[][] NAV = {{"/", "Overview"}, {"/tasks", "Tasks"}, {"/running", "Running"},
      {"/errors", "Errors"}, {"/tenants", "Tenants"}, {"/schedules", "Schedules"}, {"/workers", "Workers"},
      {"/limits", "Limits"}};

  private Layout() {}

  static String page(PageContext ctx, String title, Html body) {
    Html h = new Html();
    h.raw("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">")
        .raw("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">")
        .el("title", title + " \u00b7 pgtask")
        .open("link", "rel", "stylesheet", "href", ctx.url("/style.css"))
        .raw("</head><body><header><nav>").el("strong", "pgtask");
    for (String[] n : NAV) {
      boolean here = n[0].equals("/") ? ctx.request.path().equals("/") : ctx.request.path().startsWith(n[0]);
      h.el("a", n[1], "href", ctx.url(n[0]), "class", here ? "here" : null);
    }
    h.el("span", ctx.allowsAny() ? "actions enabled" : "read-only", "class",
        ctx.allowsAny() ? "mode rw" : "mode ro", "id", "mode");
    h.raw("</nav></header><main>").el("h1", title);
    String msg = Messages.of(ctx.request.query().get("done"));
    if (msg != null) {
      h.el("p", msg, "class", "flash", "id", "flash");
    }
    h.raw(body.toString()).raw("</main></body></html>");
    return h.toString();
  }

  /** A page that only says what went wrong. */
  static String problem(PageContext ctx, String title, String message) {
    return page(ctx, title, new Html().el("p", message, "class", "problem", "id", "problem"));
  }

  /** The messages after an action's redirect, by key: only these are shown, never a text from the query. */
  static final class Messages {
    private Messages() {}

    static String of(String key) {
      if (key == null) {
        return null;
      }
      return switch (key) {
        case "retried" -> "The task was retried: it is available again.";
        case "cancelled" -> "The task was cancelled (a running one was asked to stop).";
        case "deleted" -> "The task was deleted.";
        case "paused" -> "Paused.";
        case "resumed" -> "Resumed.";
        default -> null;
      };
    }
  }
}
