package dev.pgtask.spring;

import java.util.Map;
import org.springframework.context.ApplicationContext;

/**
 * A health result read without compiling against either Spring Boot line's health types (Boot 3.5:
 * {@code org.springframework.boot.actuate.health.Health}, Boot 4:
 * {@code org.springframework.boot.health.contributor.Health} and the endpoint's descriptors): both
 * have {@code getStatus().getCode()} and {@code getDetails()}, and both endpoints
 * {@code healthForPath(String...)}. The same compiled test then runs on every line.
 */
record LineHealth(String status, Map<String, Object> details) {

  /** The contributor {@code path} as the context's {@code healthEndpoint} bean reports it. */
  static LineHealth of(ApplicationContext context, String path) {
    Object endpoint = context.getBean("healthEndpoint");
    try {
      return of(endpoint.getClass().getMethod("healthForPath", String[].class)
          .invoke(endpoint, (Object) new String[] {path}));
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException(e);
    }
  }

  /** A {@code Health} (or health descriptor) of either line. */
  @SuppressWarnings("unchecked")
  static LineHealth of(Object health) {
    try {
      Object status = health.getClass().getMethod("getStatus").invoke(health);
      String code = (String) status.getClass().getMethod("getCode").invoke(status);
      Map<String, Object> details = (Map<String, Object>) health.getClass().getMethod("getDetails").invoke(health);
      return new LineHealth(code, details == null ? Map.of() : details);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException(e);
    }
  }
}
