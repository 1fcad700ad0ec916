package dev.pgtask.spring;

import dev.pgtask.PgTask;
import dev.pgtask.PgTaskMetrics;
import dev.pgtask.micrometer.MicrometerMetrics;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * Micrometer meters for pgtask's client and worker, when the application has a {@code MeterRegistry}
 * (meter names and tags: {@link MicrometerMetrics}). Runs before {@link PgTaskAutoConfiguration},
 * after Boot's metrics auto-configurations (named by class name: Boot 4 moved them).
 */
@AutoConfiguration(before = PgTaskAutoConfiguration.class,
    afterName = {"org.springframework.boot.actuate.autoconfigure.metrics.MetricsAutoConfiguration",
        "org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration",
        // Boot 4
        "org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration",
        "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration"})
@ConditionalOnClass({MeterRegistry.class, PgTask.class})
@ConditionalOnBean(MeterRegistry.class)
public class PgTaskMetricsAutoConfiguration {
  /** Reports to the application's registry. */
  @Bean
  @ConditionalOnMissingBean(PgTaskMetrics.class)
  public PgTaskMetrics pgTaskMetrics(MeterRegistry registry) {
    return new MicrometerMetrics(registry);
  }
}

