package dev.pgtask.spring;

import dev.pgtask.PgTask;
import javax.sql.DataSource;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.autoconfigure.health.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.actuate.health.HealthIndicator;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * The actuator health indicator {@code pgtask} ({@link PgTaskHealthIndicator}), when
 * spring-boot-actuator is there; off with {@code management.health.pgtask.enabled=false}.
 */
@AutoConfiguration(after = PgTaskAutoConfiguration.class)
@ConditionalOnClass(HealthIndicator.class)
@ConditionalOnBean(PgTask.class)
@ConditionalOnEnabledHealthIndicator("pgtask")
public class PgTaskHealthAutoConfiguration {
  /** Bean name {@code pgtaskHealthIndicator}: the contributor is called {@code pgtask}. */
  @Bean
  @ConditionalOnMissingBean(name = "pgtaskHealthIndicator")
  public PgTaskHealthIndicator pgtaskHealthIndicator(DataSource dataSource,
      ObjectProvider<PgTaskWorkerLifecycle> worker, PgTaskProperties properties) {
    return new PgTaskHealthIndicator(dataSource, worker.getIfAvailable(), properties);
  }
}
