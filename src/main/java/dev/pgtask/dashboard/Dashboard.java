package dev.pgtask.dashboard;

import dev.pgtask.InvalidTaskException;
import dev.pgtask.PgTask;
import dev.pgtask.PgTaskException;
import dev.pgtask.TaskBusyException;
import dev.pgtask.TaskNotFoundException;
import dev.pgtask.TaskStateException;
import dev.pgtask.ops.PgTaskOperations;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * pgtask's operator dashboard: server-rendered pages over the operator reads ({@link
 * PgTaskOperations}) and the task operations ({@link PgTask}). {@link #handle} is the whole of it,
 * a request in, a response out, so any server can carry it: {@link Builder#start()} serves it with
 * the JDK's HTTP server, {@code pgtask dashboard} does so from the command line, and the Spring Boot
 * integration mounts it under a path of the application ({@code pgtask.dashboard.enabled}).
 *
 * <pre>{@code
 * try (DashboardServer server = Dashboard.builder(dataSource).port(8080).start()) {
 *   System.out.println("dashboard at " + server.url());
 *   ...
 * }
 * }</pre>
 *
 * <p>Safe by default: read-only unless {@link Builder#access} allows actions; bound to 127.0.0.1
 * unless {@link Builder#bind} says otherwise; every action a POST with the session's CSRF token;
 * every read a read-only transaction with a server-side statement timeout ({@link
 * #DEFAULT_TIMEOUT}); every value HTML-escaped; no script served. See docs/dashboard.md.
 * Thread-safe: one instance serves concurrent requests.
 */
public final class Dashboard {

  /** The statement timeout of every read of a page, unless {@link Builder#timeout} says otherwise. */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(5);
  /** Tasks per page of the task list, unless {@link Builder#pageSize} says otherwise. */
  public static final int DEFAULT_PAGE_SIZE = 50;
  /** The port of {@link Builder#start()} unless {@link Builder#port} says otherwise. */
  public static final int DEFAULT_PORT = 8080;
  /** The address {@link Builder#start()} binds to unless {@link Builder#bind} says otherwise: this machine only. */
  public static final String DEFAULT_BIND = "127.0.0.1";

  private final PgTaskOperations ops;
  private final PgTask pgtask;
  private final DashboardAccess access;
  private final int pageSize;

  private Dashboard(Builder b) {
    this.ops = PgTaskOperations.create(b.dataSource).withTimeout(b.timeout);
    this.pgtask = PgTask.create(b.dataSource);
    this.access = b.access;
    this.pageSize = b.pageSize;
  }

  /** A dashboard over {@code dataSource} (a pool: each read borrows a connection for one short transaction). */
  public static Builder builder(DataSource dataSource) {
    return new Builder(Objects.requireNonNull(dataSource, "dataSource"));
  }

  /**
   * Answers one request. Never throws for a request: a bad one is answered 400, a denied action or a
   * missing or wrong CSRF token 403, an unknown path 404, a failed read 500, each with a page that
   * says why.
   */
  public DashboardResponse handle(DashboardRequest request) {
    Csrf csrf = Csrf.of(request);
    PageContext ctx = new PageContext(request, ops, pgtask, access, csrf, pageSize);
    DashboardResponse r;
    try {
      r = switch (request.method()) {
        case "GET", "HEAD" -> get(ctx);
        case "POST" -> post(ctx);
        default -> page(405, ctx, Layout.problem(ctx, "Method not allowed", "Only GET and POST are served."));
      };
    } catch (BadRequest | IllegalArgumentException | InvalidTaskException e) {
      r = page(400, ctx, Layout.problem(ctx, "Bad request", e.getMessage()));
    } catch (TaskNotFoundException e) {
      r = page(404, ctx, Layout.problem(ctx, "Not found", e.getMessage()));
    } catch (TaskStateException | TaskBusyException e) {
      r = page(409, ctx, Layout.problem(ctx, "Not possible now", e.getMessage()));
    } catch (PgTaskException e) {
      r = page(500, ctx, Layout.problem(ctx, "The database did not answer", e.getMessage()));
    } catch (RuntimeException e) {
      r = page(500, ctx, Layout.problem(ctx, "Internal error", e.toString()));
    }
    String cookie = csrf.setCookie(request.basePath());
    if (cookie == null) {
      return r;
    }
    Map<String, String> headers = new LinkedHashMap<>(r.headers());
    headers.put("Set-Cookie", cookie);
    return new DashboardResponse(r.status(), r.contentType(), r.body(), headers);
  }

  private DashboardResponse get(PageContext ctx) {
    String path = ctx.request.path();
    if (path.equals("/style.css")) {
      return new DashboardResponse(200, "text/css; charset=utf-8", Styles.CSS.getBytes(StandardCharsets.UTF_8),
          Map.of("Cache-Control", "max-age=3600", "X-Content-Type-Options", "nosniff"));
    }
    if (path.startsWith("/tasks/")) {
      return TaskPage.render(ctx, TasksPage.id(path.substring("/tasks/".length())));
    }
    if (path.equals("/bulk")) {
      DashboardAction a = BulkPage.action(ctx.request.query());
      return ctx.allows(a) ? page(200, ctx, BulkPage.dryRun(ctx)) : forbidden(ctx, "This dashboard is read-only for you: "
          + a + " is not allowed.");
    }
    String html = switch (path) {
      case "/", "" -> OverviewPage.render(ctx);
      case "/tasks" -> TasksPage.render(ctx);
      case "/running" -> RunningPage.render(ctx);
      case "/errors" -> ErrorsPage.render(ctx);
      case "/tenants" -> TenantsPage.render(ctx);
      case "/schedules" -> SchedulesPage.render(ctx);
      case "/workers" -> WorkersPage.render(ctx);
      case "/limits" -> LimitsPage.render(ctx);
      default -> null;
    };
    return html == null ? page(404, ctx, Layout.problem(ctx, "Not found", "No page here.")) : page(200, ctx, html);
  }

  /** An action: the path names it, the access callback allows it, the CSRF token matches; then it runs. */
  private DashboardResponse post(PageContext ctx) {
    Actions.Target t = Actions.target(ctx.request.path());
    if (t == null) {
      return page(404, ctx, Layout.problem(ctx, "Not found", "No action here."));
    }
    DashboardAction action = t.action() != null ? t.action() : Actions.bulkAction(ctx.request.form());
    if (!ctx.allows(action)) {
      return forbidden(ctx, "This dashboard is read-only for you: " + action + " is not allowed. Nothing changed.");
    }
    if (!Csrf.accepts(ctx.request)) {
      return forbidden(ctx, "The form's security token is missing or does not match this session's (a request from "
          + "another site, or an old page): nothing changed. Reload the page and try again.");
    }
    if (t.action() == null) {
      return page(200, ctx, BulkPage.run(ctx));
    }
    String next = Actions.perform(pgtask, t);
    return new DashboardResponse(303, "text/plain; charset=utf-8", new byte[0],
        Map.of("Location", ctx.request.basePath() + next, "Cache-Control", "no-store"));
  }

  private static DashboardResponse forbidden(PageContext ctx, String message) {
    return page(403, ctx, Layout.problem(ctx, "Forbidden", message));
  }

  static DashboardResponse page(int status, PageContext ctx, String html) {
    return DashboardResponse.html(status, html, Map.of());
  }

  /** The settings of a dashboard; {@link #build()} or {@link #start()} it. */
  public static final class Builder {
    private final DataSource dataSource;
    private DashboardAccess access = DashboardAccess.READ_ONLY;
    private Duration timeout = DEFAULT_TIMEOUT;
    private int pageSize = DEFAULT_PAGE_SIZE;
    private String bind = DEFAULT_BIND;
    private int port = DEFAULT_PORT;

    private Builder(DataSource dataSource) {
      this.dataSource = dataSource;
    }

    /** Who may do what ({@link DashboardAccess#READ_ONLY} unless set): asked for every action shown and posted. */
    public Builder access(DashboardAccess access) {
      this.access = Objects.requireNonNull(access, "access");
      return this;
    }

    /** The server-side statement timeout of each read (at least 1 ms; {@link #DEFAULT_TIMEOUT} unless set). */
    public Builder timeout(Duration timeout) {
      if (timeout == null || timeout.toMillis() < 1) {
        throw new IllegalArgumentException("the dashboard's read timeout must be at least 1 ms: " + timeout);
      }
      this.timeout = timeout;
      return this;
    }

    /** Tasks per page of the task list, 1 to 500 ({@link #DEFAULT_PAGE_SIZE} unless set). */
    public Builder pageSize(int pageSize) {
      if (pageSize < 1 || pageSize > 500) {
        throw new IllegalArgumentException("the dashboard's page size must be between 1 and 500: " + pageSize);
      }
      this.pageSize = pageSize;
      return this;
    }

    /** The address {@link #start()} listens on ({@link #DEFAULT_BIND} unless set; {@code 0.0.0.0}: every interface). */
    public Builder bind(String address) {
      this.bind = Objects.requireNonNull(address, "address");
      return this;
    }

    /** The port {@link #start()} listens on, 0 for any free one ({@link #DEFAULT_PORT} unless set). */
    public Builder port(int port) {
      if (port < 0 || port > 65535) {
        throw new IllegalArgumentException("port must be between 0 and 65535: " + port);
      }
      this.port = port;
      return this;
    }

    /** The dashboard, to be served by a server of the application's ({@link #handle}). */
    public Dashboard build() {
      return new Dashboard(this);
    }

    /** Builds the dashboard and serves it with the JDK's HTTP server on {@link #bind}:{@link #port}. */
    public DashboardServer start() {
      return DashboardServer.start(build(), bind, port);
    }
  }
}
