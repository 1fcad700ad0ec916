package dev.pgtask.spring;

import dev.pgtask.dashboard.Dashboard;
import dev.pgtask.dashboard.DashboardAccess;
import java.util.LinkedHashMap;
import java.util.Map;
import javax.sql.DataSource;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.core.Ordered;
import org.springframework.web.servlet.handler.SimpleUrlHandlerMapping;

/**
 * The operator dashboard under {@code pgtask.dashboard.path} (default {@code /pgtask}) of a Spring
 * MVC application, when {@code pgtask.dashboard.enabled=true} (off by default): a handler mapping
 * of that path to {@link PgTaskDashboardHandler}, behind the application's own security filters.
 * Read-only unless the application defines a {@link DashboardAccess} bean. Uses only Spring
 * Framework's MVC types and the servlet API, the same on Boot 3.5, 4.0 and 4.1.
 */
@AutoConfiguration(after = PgTaskAutoConfiguration.class)
@ConditionalOnClass(name = {"org.springframework.web.servlet.handler.SimpleUrlHandlerMapping",
    "jakarta.servlet.http.HttpServletRequest"})
@ConditionalOnBean(DataSource.class)
@ConditionalOnProperty(prefix = "pgtask.dashboard", name = "enabled", havingValue = "true")
public class PgTaskDashboardAutoConfiguration {

  /** The dashboard's path and everything below it, mapped before the application's static resources. */
  @Bean
  public SimpleUrlHandlerMapping pgtaskDashboardHandlerMapping(DataSource dataSource, PgTaskProperties properties,
      ObjectProvider<DashboardAccess> access) {
    String path = normalize(properties.getDashboard().getPath());
    Dashboard dashboard = Dashboard.builder(dataSource)
        .access(access.getIfAvailable(() -> DashboardAccess.READ_ONLY)).build();
    PgTaskDashboardHandler handler = new PgTaskDashboardHandler(dashboard, path);
    Map<String, Object> urls = new LinkedHashMap<>();
    urls.put(path, handler);
    urls.put(path + "/**", handler);
    SimpleUrlHandlerMapping mapping = new SimpleUrlHandlerMapping(urls);
    mapping.setOrder(Ordered.HIGHEST_PRECEDENCE + 100);
    return mapping;
  }

  static String normalize(String path) {
    String p = path == null || path.isBlank() ? "/pgtask" : path.strip();
    p = p.startsWith("/") ? p : "/" + p;
    while (p.endsWith("/") && p.length() > 1) {
      p = p.substring(0, p.length() - 1);
    }
    if (p.equals("/")) {
      throw new IllegalArgumentException("pgtask.dashboard.path must not be the application's root: give a path "
          + "such as /pgtask");
    }
    return p;
  }
}
