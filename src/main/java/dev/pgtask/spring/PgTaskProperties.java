package dev.pgtask.spring;

import dev.pgtask.PgTaskWorker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The {@code pgtask.*} properties of the Spring Boot integration. Defaults are pgtask's own
 * ({@link PgTaskWorker}'s constants, written out as literals so that the IDE metadata shows them;
 * a test keeps them equal), {@code pgtask.worker.shutdown-timeout} included: its 20 s let a stop fit
 * in Spring's default shutdown phase (30 s) and Kubernetes' default grace period (30 s).
 */
@ConfigurationProperties(prefix = "pgtask")
public class PgTaskProperties {

  /** Default time running tasks get to finish when the application stops: the plain worker's default. */
  public static final Duration DEFAULT_SHUTDOWN_TIMEOUT = dev.pgtask.PgTaskWorker.DEFAULT_SHUTDOWN_TIMEOUT;

  private final Migrations migrations = new Migrations();
  private final Worker worker = new Worker();
  private final Health health = new Health();
  private final Dashboard dashboard = new Dashboard();

  public Migrations getMigrations() {
    return migrations;
  }

  public Worker getWorker() {
    return worker;
  }

  public Health getHealth() {
    return health;
  }

  public Dashboard getDashboard() {
    return dashboard;
  }

  /**
   * The operator dashboard mounted in this Spring MVC application (docs/dashboard.md): off unless
   * enabled; read-only unless the application defines a DashboardAccess bean; guarded by the
   * application's own security (Spring Security rules for the path).
   */
  public static class Dashboard {
    /** Whether to serve the dashboard under {@code path}. */
    private boolean enabled = false;
    /** The path it is served under, e.g. /pgtask (pages at /pgtask/, /pgtask/tasks, ...). */
    private String path = "/pgtask";

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public String getPath() {
      return path;
    }

    public void setPath(String path) {
      this.path = path;
    }
  }

  /** pgtask's own schema migrations. */
  public static class Migrations {
    /**
     * Whether to apply pgtask's migrations at startup (schema "pgtask", history table
     * pgtask.pgtask_schema_history; the application's own Flyway history is never touched). Turn
     * off when the schema is migrated by a deployment step (bin/pgtask migrate).
     */
    private boolean enabled = true;

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }
  }

  /** The worker that runs the handler beans. */
  public static class Worker {
    /** Whether to run a worker in this application (it starts only when handler beans exist). */
    private boolean enabled = true;
    /**
     * Whether the worker starts with the application context. False in tests that run tasks in the
     * test thread through PgTaskWorkerLifecycle.tester() (docs/testing.md).
     */
    private boolean autoStartup = true;
    /** The queues to claim from. */
    private List<String> queues = new ArrayList<>(List.of("default"));
    /** Tasks executed at once. */
    private int concurrency = 10;
    /** Maximum tasks claimed by one statement. */
    private int batchSize = 50;
    /** Claimed tasks that may wait locally for a free executor (-1: adaptive, what the last 100 ms finished, at most 400). */
    private int prefetch = -1;
    /** Most tasks committed together in one transaction, for kinds that opt in with HandlerOptions.withSharedTransaction() and short tasks only (1: one transaction per task). */
    private int commitBatchSize = 32;
    /** Longest time a transaction carrying several tasks stays open. */
    private Duration commitBatchTime = Duration.ofMillis(10);
    /** Polling interval when no notification arrives. */
    private Duration pollInterval = Duration.ofSeconds(5);
    /** Default task timeout (a handler may set its own). */
    private Duration taskTimeout = Duration.ofMinutes(5);
    /**
     * Time running tasks get to finish when the application stops; the rest are interrupted and
     * rolled back (available again, attempt given back). Must be shorter than
     * spring.lifecycle.timeout-per-shutdown-phase.
     */
    private Duration shutdownTimeout = Duration.ofSeconds(20);
    /** Claim lease: a task whose worker died is rescued after this (plus the rescue interval). */
    private Duration leaseDuration = Duration.ofSeconds(30);
    /** Interval of the maintenance passes (rescue, tenant repair, retention). */
    private Duration rescueInterval = Duration.ofSeconds(10);
    /** Delay before a task whose tenant lock was busy is tried again. */
    private Duration tenantDeferDelay = Duration.ofSeconds(1);
    /** First retry delay; doubles per attempt. */
    private Duration retryBackoffBase = Duration.ofSeconds(1);
    /** Longest retry delay. */
    private Duration retryBackoffCap = Duration.ofHours(1);
    /** How long completed tasks stay in the table. */
    private Duration completedRetention = Duration.ofHours(24);
    /** How long cancelled and discarded tasks stay in the table. */
    private Duration failedRetention = Duration.ofDays(7);
    /** This worker's id (default host:pid-xxxx, unique per process start). */
    private String id;
    /**
     * Connections of the worker's own pool (default: concurrency + 1, the least it needs). The
     * worker does not borrow from the application's pool, so Boot's default pool of 10 and the
     * default concurrency of 10 work together and web requests never wait for tasks.
     */
    private Integer poolSize;
    /**
     * Whether the worker gets its own pool (built from the application's HikariCP settings or
     * spring.datasource.*). When false it uses the application's DataSource, which must then have
     * more connections than pgtask.worker.concurrency.
     */
    private boolean ownPool = true;
    private final Listen listen = new Listen();

    public boolean isEnabled() { return enabled; }
    public void setEnabled(boolean enabled) { this.enabled = enabled; }
    public boolean isAutoStartup() { return autoStartup; }
    public void setAutoStartup(boolean autoStartup) { this.autoStartup = autoStartup; }
    public List<String> getQueues() { return queues; }
    public void setQueues(List<String> queues) { this.queues = queues; }
    public int getConcurrency() { return concurrency; }
    public void setConcurrency(int concurrency) { this.concurrency = concurrency; }
    public int getBatchSize() { return batchSize; }
    public void setBatchSize(int batchSize) { this.batchSize = batchSize; }
    public int getPrefetch() { return prefetch; }
    public void setPrefetch(int prefetch) { this.prefetch = prefetch; }
    public int getCommitBatchSize() { return commitBatchSize; }
    public void setCommitBatchSize(int commitBatchSize) { this.commitBatchSize = commitBatchSize; }
    public Duration getCommitBatchTime() { return commitBatchTime; }
    public void setCommitBatchTime(Duration commitBatchTime) { this.commitBatchTime = commitBatchTime; }
    public Duration getPollInterval() { return pollInterval; }
    public void setPollInterval(Duration pollInterval) { this.pollInterval = pollInterval; }
    public Duration getTaskTimeout() { return taskTimeout; }
    public void setTaskTimeout(Duration taskTimeout) { this.taskTimeout = taskTimeout; }
    public Duration getShutdownTimeout() { return shutdownTimeout; }
    public void setShutdownTimeout(Duration shutdownTimeout) { this.shutdownTimeout = shutdownTimeout; }
    public Duration getLeaseDuration() { return leaseDuration; }
    public void setLeaseDuration(Duration leaseDuration) { this.leaseDuration = leaseDuration; }
    public Duration getRescueInterval() { return rescueInterval; }
    public void setRescueInterval(Duration rescueInterval) { this.rescueInterval = rescueInterval; }
    public Duration getTenantDeferDelay() { return tenantDeferDelay; }
    public void setTenantDeferDelay(Duration tenantDeferDelay) { this.tenantDeferDelay = tenantDeferDelay; }
    public Duration getRetryBackoffBase() { return retryBackoffBase; }
    public void setRetryBackoffBase(Duration retryBackoffBase) { this.retryBackoffBase = retryBackoffBase; }
    public Duration getRetryBackoffCap() { return retryBackoffCap; }
    public void setRetryBackoffCap(Duration retryBackoffCap) { this.retryBackoffCap = retryBackoffCap; }
    public Duration getCompletedRetention() { return completedRetention; }
    public void setCompletedRetention(Duration completedRetention) { this.completedRetention = completedRetention; }
    public Duration getFailedRetention() { return failedRetention; }
    public void setFailedRetention(Duration failedRetention) { this.failedRetention = failedRetention; }
    public String getId() { return id; }
    public void setId(String id) { this.id = id; }
    public Integer getPoolSize() { return poolSize; }
    public void setPoolSize(Integer poolSize) { this.poolSize = poolSize; }
    public boolean isOwnPool() { return ownPool; }
    public void setOwnPool(boolean ownPool) { this.ownPool = ownPool; }
    public Listen getListen() { return listen; }
  }

  /** The worker's dedicated LISTEN connection (a direct connection, never pooled). */
  public static class Listen {
    /**
     * JDBC URL for the LISTEN connection, when the application's URL goes through a pooler in
     * transaction mode (PgBouncer) where LISTEN does not work. Default: the worker pool's URL.
     */
    private String url;
    /** User for listen.url (default: the pool's user). */
    private String username;
    /** Password for listen.url (default: the pool's password). */
    private String password;
    /** Health-check interval of the LISTEN connection. */
    private Duration pingInterval = Duration.ofSeconds(10);

    public String getUrl() { return url; }
    public void setUrl(String url) { this.url = url; }
    public String getUsername() { return username; }
    public void setUsername(String username) { this.username = username; }
    public String getPassword() { return password; }
    public void setPassword(String password) { this.password = password; }
    public Duration getPingInterval() { return pingInterval; }
    public void setPingInterval(Duration pingInterval) { this.pingInterval = pingInterval; }
  }

  /** The actuator health indicator "pgtask". */
  public static class Health {
    /**
     * The indicator reports DOWN when the worker's last successful claim is older than this
     * (default: three poll intervals plus 30 s): its claim loop is stuck or the database is gone.
     */
    private Duration claimStall;
    /** Oldest due task's lag above which the indicator adds a warning. */
    private Duration lagWarning = Duration.ofMinutes(5);
    /** pg_notification_queue_usage() above which the indicator adds a warning (0..1). */
    private double notificationQueueWarning = 0.5;

    public Duration getClaimStall() { return claimStall; }
    public void setClaimStall(Duration claimStall) { this.claimStall = claimStall; }
    public Duration getLagWarning() { return lagWarning; }
    public void setLagWarning(Duration lagWarning) { this.lagWarning = lagWarning; }
    public double getNotificationQueueWarning() { return notificationQueueWarning; }
    public void setNotificationQueueWarning(double notificationQueueWarning) { this.notificationQueueWarning = notificationQueueWarning; }
  }
}
