package dev.pgtask.spring;

import javax.sql.DataSource;
import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;

/**
 * The actuator health indicator {@code pgtask} ({@code /actuator/health/pgtask}) on Spring Boot 4
 * (health types in {@code org.springframework.boot.health.contributor}); what it reports:
 * {@code PgTaskHealthCheck}. On Boot 3.5: {@link PgTaskHealthIndicator}.
 */
public final class PgTaskBoot4HealthIndicator extends AbstractHealthIndicator {

  private final PgTaskHealthCheck check;

  PgTaskBoot4HealthIndicator(DataSource dataSource, PgTaskWorkerLifecycle worker, PgTaskProperties properties) {
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
