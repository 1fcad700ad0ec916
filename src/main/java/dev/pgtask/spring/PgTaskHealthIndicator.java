package dev.pgtask.spring;

import javax.sql.DataSource;
import org.springframework.boot.actuate.health.AbstractHealthIndicator;
import org.springframework.boot.actuate.health.Health;

/**
 * The actuator health indicator {@code pgtask} ({@code /actuator/health/pgtask}) on Spring Boot 3.5;
 * what it reports: {@code PgTaskHealthCheck}. On Boot 4: {@link PgTaskBoot4HealthIndicator}.
 */
public final class PgTaskHealthIndicator extends AbstractHealthIndicator {

  private final PgTaskHealthCheck check;

  PgTaskHealthIndicator(DataSource dataSource, PgTaskWorkerLifecycle worker, PgTaskProperties properties) {
    super("pgtask health check failed");
    this.check = new PgTaskHealthCheck(dataSource, worker, properties);
  }

  @Override
  protected void doHealthCheck(Health.Builder builder) {
    PgTaskHealthCheck.Result r = check.check();
    builder.withDetails(r.details());
    if (r.up()) {
      builder.up();
    } else {
      builder.down();
    }
  }
}
