package dev.pgtask.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.TestDatabase;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Configuration;

/**
 * An application with its own Flyway keeps its history table and locations; pgtask's migrations
 * have theirs. Needs the Flyway version Boot 3.5 manages (its Flyway auto-configuration does not run
 * on Flyway 12 or later): it runs in the build's spring-boot-managed-versions test run, on the
 * versions Boot manages (or with -Pspring-boot-versions).
 */
@Tag("spring-boot-versions")
class ApplicationOwnFlywayTest {

  @Configuration(proxyBeanMethods = false)
  @EnableAutoConfiguration
  static class App {}

  @Test
  void anApplicationsOwnFlywayKeepsItsOwnHistoryAndLocations() throws Exception {
    try (TestDatabase db = TestDatabase.create("spring_ownflyway", false)) {
      Db sql = new Db(db);
      try (ConfigurableApplicationContext app = SpringApps.run(db, App.class, "pgtask.worker.enabled=false",
          "spring.flyway.locations=classpath:dev/pgtask/spring/appdb")) {
        assertThat(app.getBeanNamesForType(org.flywaydb.core.Flyway.class)).hasSize(1);
      }
      assertThat(sql.rows("SELECT version || ' ' || script FROM public.flyway_schema_history WHERE version IS NOT NULL"))
          .containsExactly("1 V1__app_tables.sql");
      assertThat(sql.count("SELECT count(*) FROM public.orders")).isZero();
      assertThat(sql.count("SELECT count(*) FROM pgtask.pgtask_schema_history WHERE script = 'V1__tables.sql'"))
          .isEqualTo(1);
    }
  }

  @Test
  void bootsFlywayWouldFailOnAnExistingSchemaWhichIsWhyItIsOffWithoutSettings() throws Exception {
    try (TestDatabase db = TestDatabase.create("spring_bootflyway", false)) {
      new Db(db).exec("CREATE TABLE public.customer (id bigint PRIMARY KEY)");
      assertThatThrownBy(() -> SpringApps.run(db, App.class, "pgtask.worker.enabled=false",
          "spring.flyway.enabled=true").close())
          .hasStackTraceContaining("Found non-empty schema(s) \"public\" but no schema history table");
    }
  }
}
