package dev.pgtask.spring;

import dev.pgtask.PgTask;
import javax.sql.DataSource;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The actuator health indicator {@code pgtask}, when the running Spring Boot line's health types are
 * there; off with {@code management.health.pgtask.enabled=false}.
 *
 * <p>Boot 3.5 keeps them in spring-boot-actuator ({@code org.springframework.boot.actuate.health}),
 * Boot 4 in spring-boot-health ({@code org.springframework.boot.health.contributor}). One small
 * configuration per line, each guarded by its line's {@code HealthIndicator} class name, registers
 * that line's indicator; the other line's configuration is skipped before any of its types is loaded.
 */
@AutoConfiguration(after = PgTaskAutoConfiguration.class)
@ConditionalOnBean(PgTask.class)
public class PgTaskHealthAutoConfiguration {

  /** Spring Boot 3.5: {@link PgTaskHealthIndicator}. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "org.springframework.boot.actuate.health.HealthIndicator")
  @org.springframework.boot.actuate.autoconfigure.health.ConditionalOnEnabledHealthIndicator("pgtask")
  static class Boot3Health {
    /** Bean name {@code pgtaskHealthIndicator}: the contributor is called {@code pgtask}. */
    @Bean
    @ConditionalOnMissingBean(name = "pgtaskHealthIndicator")
    PgTaskHealthIndicator pgtaskHealthIndicator(DataSource dataSource,
        ObjectProvider<PgTaskWorkerLifecycle> worker, PgTaskProperties properties) {
      return new PgTaskHealthIndicator(dataSource, worker.getIfAvailable(), properties);
    }
  }

  /** Spring Boot 4: {@link PgTaskBoot4HealthIndicator}. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "org.springframework.boot.health.contributor.HealthIndicator")
  @org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator("pgtask")
  static class Boot4Health {
    /** Bean name {@code pgtaskHealthIndicator}: the contributor is called {@code pgtask}. */
    @Bean
    @ConditionalOnMissingBean(name = "pgtaskHealthIndicator")
    PgTaskBoot4HealthIndicator pgtaskHealthIndicator(DataSource dataSource,
        ObjectProvider<PgTaskWorkerLifecycle> worker, PgTaskProperties properties) {
      return new PgTaskBoot4HealthIndicator(dataSource, worker.getIfAvailable(), properties);
    }
  }
}
