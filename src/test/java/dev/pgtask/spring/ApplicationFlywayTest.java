package dev.pgtask.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.TestDatabase;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.MapPropertySource;
import org.springframework.core.env.StandardEnvironment;
import org.springframework.core.env.SystemEnvironmentPropertySource;
import org.springframework.core.io.DefaultResourceLoader;

/**
 * pgtask's flyway-core does not switch Boot's Flyway on: an application with existing tables and
 * no Flyway of its own starts, and Boot's Flyway stays for applications that show they use it.
 */
class ApplicationFlywayTest {

  @Configuration(proxyBeanMethods = false)
  @EnableAutoConfiguration
  static class App {}

  @Test
  void anApplicationWithExistingTablesAndNoFlywayOfItsOwnStartsCleanly() throws Exception {
    try (TestDatabase db = TestDatabase.create("spring_noflyway", false)) {
      Db sql = new Db(db);
      sql.exec("CREATE TABLE public.customer (id bigint PRIMARY KEY, name text)");
      sql.exec("INSERT INTO public.customer VALUES (1, 'existing')");
      try (ConfigurableApplicationContext app = SpringApps.run(db, App.class, "pgtask.worker.enabled=false")) {
        assertThat(app.getBeanNamesForType(org.flywaydb.core.Flyway.class)).as("Boot's Flyway bean").isEmpty();
      }
      assertThat(sql.count("SELECT count(*) FROM pgtask.pgtask_schema_history WHERE success")).isPositive();
      assertThat(sql.count("SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"
          + " AND table_name = 'flyway_schema_history'")).as("no history table in the application's schema").isZero();
      assertThat(sql.text("SELECT name FROM public.customer WHERE id = 1")).isEqualTo("existing");
    }
  }

  private static boolean kept(StandardEnvironment env, ClassLoader loader) {
    ApplicationFlywayFilter filter = new ApplicationFlywayFilter();
    filter.setEnvironment(env);
    filter.setResourceLoader(new DefaultResourceLoader(loader));
    boolean[] match = filter.match(new String[] {"x.Other",
        "org.springframework.boot.autoconfigure.flyway.FlywayAutoConfiguration", // Boot 3.5
        "org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration"}, null); // Boot 4
    assertThat(match[0]).as("other auto-configurations are never filtered").isTrue();
    assertThat(match[2]).as("Boot 4's Flyway auto-configuration is kept or filtered as Boot 3.5's").isEqualTo(match[1]);
    return match[1];
  }

  @Test
  void bootsFlywayIsKeptForApplicationsWithSpringFlywaySettingsOrMigrationsAtTheDefaultLocation(@TempDir Path dir)
      throws Exception {
    ClassLoader plain = new URLClassLoader(new URL[0], null);
    assertThat(kept(new StandardEnvironment(), plain)).as("no settings, no migrations").isFalse();

    StandardEnvironment withLocations = new StandardEnvironment();
    withLocations.getPropertySources().addFirst(new MapPropertySource("app",
        Map.of("spring.flyway.locations", "classpath:my/migrations")));
    assertThat(kept(withLocations, plain)).isTrue();

    StandardEnvironment withEnvVar = new StandardEnvironment();
    withEnvVar.getPropertySources().replace(StandardEnvironment.SYSTEM_ENVIRONMENT_PROPERTY_SOURCE_NAME,
        new SystemEnvironmentPropertySource(StandardEnvironment.SYSTEM_ENVIRONMENT_PROPERTY_SOURCE_NAME,
            Map.of("SPRING_FLYWAY_ENABLED", "true")));
    assertThat(kept(withEnvVar, plain)).as("relaxed names: an environment variable").isTrue();

    Files.createDirectories(dir.resolve("db/migration"));
    Files.writeString(dir.resolve("db/migration/V1__app.sql"), "CREATE TABLE app (id int);");
    try (URLClassLoader withMigrations = new URLClassLoader(new URL[] {dir.toUri().toURL()}, null)) {
      assertThat(kept(new StandardEnvironment(), withMigrations)).as("migrations at classpath:db/migration").isTrue();
    }
  }
}
