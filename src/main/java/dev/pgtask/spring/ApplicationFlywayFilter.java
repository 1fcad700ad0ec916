package dev.pgtask.spring;

import java.io.IOException;
import java.util.Arrays;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.autoconfigure.AutoConfigurationImportFilter;
import org.springframework.boot.autoconfigure.AutoConfigurationMetadata;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.context.properties.source.ConfigurationPropertySource;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.boot.context.properties.source.ConfigurationPropertyState;
import org.springframework.context.EnvironmentAware;
import org.springframework.context.ResourceLoaderAware;
import org.springframework.core.env.Environment;
import org.springframework.core.io.Resource;
import org.springframework.core.io.ResourceLoader;
import org.springframework.core.io.support.ResourcePatternResolver;
import org.springframework.core.io.support.ResourcePatternUtils;

/**
 * Keeps Spring Boot's own Flyway auto-configuration for applications that use Flyway themselves,
 * and only for them.
 *
 * <p>pgtask needs {@code flyway-core} for its own migrations (schema {@code pgtask}, their own
 * history table). Boot switches its {@code FlywayAutoConfiguration} on whenever that class is on the
 * classpath, and then migrates the application's schema at startup: an application with existing
 * tables and no Flyway of its own fails ({@code Found non-empty schema(s) "public" but no schema
 * history table}), one with an empty schema gets an empty {@code flyway_schema_history} it never
 * asked for. This filter removes Boot's Flyway auto-configuration unless the application shows it
 * uses Flyway: a {@code spring.flyway.*} property is set (in any property source; e.g.
 * {@code spring.flyway.enabled=true} or {@code spring.flyway.locations}), or there are files under
 * Boot's default location {@code classpath:db/migration}. Registered in
 * {@code META-INF/spring.factories}; an import filter runs before any bean exists, so it sees
 * properties and the classpath, not beans.
 */
public final class ApplicationFlywayFilter implements AutoConfigurationImportFilter, EnvironmentAware,
    ResourceLoaderAware {

  /** Boot's Flyway auto-configuration: Boot 3.5's class, and Boot 4's (module spring-boot-flyway). */
  static final java.util.Set<String> FLYWAY_AUTO_CONFIGURATIONS = java.util.Set.of(
      "org.springframework.boot.autoconfigure.flyway.FlywayAutoConfiguration",
      "org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration");
  static final String DEFAULT_LOCATION = "classpath*:db/migration/**/*";
  private static final ConfigurationPropertyName SPRING_FLYWAY = ConfigurationPropertyName.of("spring.flyway");

  private static final Logger log = LoggerFactory.getLogger(ApplicationFlywayFilter.class);

  private Environment environment;
  private ResourceLoader resourceLoader;

  @Override
  public void setEnvironment(Environment environment) {
    this.environment = environment;
  }

  @Override
  public void setResourceLoader(ResourceLoader resourceLoader) {
    this.resourceLoader = resourceLoader;
  }

  @Override
  public boolean[] match(String[] autoConfigurationClasses, AutoConfigurationMetadata metadata) {
    boolean[] match = new boolean[autoConfigurationClasses.length];
    Arrays.fill(match, true);
    for (int i = 0; i < autoConfigurationClasses.length; i++) {
      if (autoConfigurationClasses[i] != null && FLYWAY_AUTO_CONFIGURATIONS.contains(autoConfigurationClasses[i]) && !applicationUsesFlyway()) {
        match[i] = false;
        log.info("pgtask: Spring Boot's Flyway auto-configuration is off: the application has no migrations at"
            + " classpath:db/migration and no spring.flyway.* settings (flyway-core is on the classpath for"
            + " pgtask's own migrations); set spring.flyway.enabled=true to have it");
      }
    }
    return match;
  }

  private boolean applicationUsesFlyway() {
    return hasFlywayProperty() || hasDefaultLocationMigrations();
  }

  private boolean hasFlywayProperty() {
    if (environment == null) {
      return true; // cannot tell: leave Boot's behaviour alone
    }
    for (ConfigurationPropertySource source : ConfigurationPropertySources.get(environment)) {
      if (source.containsDescendantOf(SPRING_FLYWAY) == ConfigurationPropertyState.PRESENT
          || source.getConfigurationProperty(SPRING_FLYWAY) != null) {
        return true;
      }
    }
    return false;
  }

  private boolean hasDefaultLocationMigrations() {
    ResourcePatternResolver resolver = ResourcePatternUtils.getResourcePatternResolver(resourceLoader);
    try {
      for (Resource r : resolver.getResources(DEFAULT_LOCATION)) {
        String name = r.getFilename();
        if (r.isReadable() && name != null && !name.isEmpty() && !name.endsWith("/")) {
          return true;
        }
      }
      return false;
    } catch (IOException e) {
      return true; // cannot tell: leave Boot's behaviour alone
    }
  }
}
