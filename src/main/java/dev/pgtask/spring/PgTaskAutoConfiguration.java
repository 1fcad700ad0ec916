package dev.pgtask.spring;

import dev.pgtask.PgTask;
import dev.pgtask.PgTaskMetrics;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import javax.sql.DataSource;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;
import org.springframework.jdbc.datasource.DataSourceUtils;

/**
 * pgtask for Spring Boot: its migrations, a {@link PgTask} client whose {@code enqueue(...)} joins
 * the thread's Spring-managed transaction, and a worker that runs the {@link PgTaskHandler} beans
 * inside the task's transaction and starts and stops with the context. Active when the application
 * has a {@code DataSource}; every bean backs off when the application defines its own.
 *
 * <p>Runs on Spring Boot 3.5 and 4: it names the auto-configurations it orders itself after by their
 * class names on both lines, and uses none of the types Boot 4 moved ({@code DataSourceProperties}:
 * the worker's own pool reads {@code spring.datasource.url}, {@code username} and {@code password}
 * with the {@link Binder}).
 */
@AutoConfiguration(afterName = {
    "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration", // Boot 3.5
    "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration", // Boot 4
    "org.springframework.boot.autoconfigure.flyway.FlywayAutoConfiguration", // Boot 3.5
    "org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration"}) // Boot 4
@ConditionalOnClass({PgTask.class, DataSourceUtils.class})
@ConditionalOnBean(DataSource.class)
@EnableConfigurationProperties(PgTaskProperties.class)
public class PgTaskAutoConfiguration {

  /** Applies pgtask's migrations (pgtask.migrations.enabled, default true). */
  @Bean
  @ConditionalOnMissingBean
  public PgTaskMigrator pgTaskMigrator(DataSource dataSource, PgTaskProperties properties) {
    return new PgTaskMigrator(dataSource, properties.getMigrations().isEnabled());
  }

  /** The client; {@code enqueue(...)} without a connection joins the Spring transaction of the thread. */
  @Bean
  @ConditionalOnMissingBean
  public PgTask pgTask(DataSource dataSource, PgTaskMigrator migrator, ObjectProvider<PgTaskMetrics> metrics) {
    return PgTask.builder(dataSource)
        .currentTransaction(new SpringCurrentTransaction(dataSource))
        .metrics(metrics.getIfAvailable(() -> PgTaskMetrics.NOOP))
        .build();
  }

  /** The worker that runs the handler beans (pgtask.worker.enabled, default true). */
  @Bean
  @ConditionalOnMissingBean
  @ConditionalOnProperty(prefix = "pgtask.worker", name = "enabled", matchIfMissing = true)
  public PgTaskWorkerLifecycle pgTaskWorker(PgTaskProperties properties, DataSource dataSource, PgTaskMigrator migrator,
      ObjectProvider<PgTaskMetrics> metrics,
      ConfigurableListableBeanFactory beanFactory, Environment environment) {
    Duration phase = Binder.get(environment).bind("spring.lifecycle.timeout-per-shutdown-phase", Duration.class)
        .orElse(Duration.ofSeconds(30));
    Binder binder = Binder.get(environment);
    PgTaskWorkerLifecycle.ConnectionSettings datasourceSettings = new PgTaskWorkerLifecycle.ConnectionSettings(
        binder.bind("spring.datasource.url", String.class).orElse(null),
        binder.bind("spring.datasource.username", String.class).orElse(null),
        binder.bind("spring.datasource.password", String.class).orElse(null));
    return new PgTaskWorkerLifecycle(properties.getWorker(), dataSource, datasourceSettings,
        new LazyHandlers(beanFactory), metrics.getIfAvailable(() -> PgTaskMetrics.NOOP), phase);
  }

  /** The handler beans, looked up when the worker starts (after every singleton exists). */
  static final class LazyHandlers extends java.util.AbstractMap<String, PgTaskHandler<?>> {
    private final ConfigurableListableBeanFactory beanFactory;
    private Map<String, PgTaskHandler<?>> beans;

    LazyHandlers(ConfigurableListableBeanFactory beanFactory) {
      this.beanFactory = beanFactory;
    }

    @Override
    @SuppressWarnings({"unchecked", "rawtypes"})
    public java.util.Set<Entry<String, PgTaskHandler<?>>> entrySet() {
      if (beans == null) {
        beans = new LinkedHashMap<>((Map) beanFactory.getBeansOfType(PgTaskHandler.class));
      }
      return beans.entrySet();
    }
  }

}
