package dev.pgtask.spring.example;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.PropertySource;

/**
 * A Spring Boot application that uses pgtask, to copy from (docs/spring-boot.md walks through it):
 * {@link OrderService} places an order and enqueues its confirmation in one {@code @Transactional}
 * method; {@link SendConfirmationHandler} writes the confirmation through the application's
 * {@code JdbcTemplate}, inside the task's transaction; {@code /actuator/health/pgtask} reports the
 * queue. pgtask applies its own migrations at startup (schema pgtask, its own Flyway history
 * table); the application's tables come from its schema.sql here, from its own migrations in real
 * life.
 *
 * <p>All it needs is the pgtask dependency, spring-boot-starter-jdbc (and -web, -actuator for the
 * endpoint) and {@code spring.datasource.*}: no bean is declared for pgtask.
 */
@SpringBootApplication
@PropertySource("classpath:dev/pgtask/spring/example/example.properties")
public class ExampleApplication {

  public static void main(String[] args) {
    SpringApplication.run(ExampleApplication.class, args);
  }
}
