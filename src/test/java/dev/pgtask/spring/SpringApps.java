package dev.pgtask.spring;

import dev.pgtask.testsupport.TestDatabase;
import java.util.ArrayList;
import java.util.List;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/** Starts real Spring Boot applications (auto-configuration through the imports file and its filters) on a test database. */
final class SpringApps {

  private SpringApps() {}

  /** The spring.datasource.* properties for {@code db}. */
  static List<String> datasource(TestDatabase db) {
    return List.of("spring.datasource.url=" + db.url(), "spring.datasource.username=" + db.user(),
        "spring.datasource.password=" + (db.password() == null ? "" : db.password()));
  }

  /** Runs an application of {@code sources} without a web server; the caller closes it. */
  static ConfigurableApplicationContext run(TestDatabase db, List<Class<?>> sources, String... properties) {
    List<String> props = new ArrayList<>(datasource(db));
    props.add("spring.main.banner-mode=off");
    props.add("pgtask.worker.poll-interval=1s");
    props.addAll(List.of(properties));
    return new SpringApplicationBuilder(sources.toArray(Class<?>[]::new))
        .web(WebApplicationType.NONE)
        .properties(props.toArray(String[]::new))
        .run();
  }

  static ConfigurableApplicationContext run(TestDatabase db, Class<?> source, String... properties) {
    return run(db, List.of(source), properties);
  }
}
