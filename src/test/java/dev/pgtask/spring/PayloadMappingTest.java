package dev.pgtask.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pgtask.PgTask;
import dev.pgtask.TaskArgs;
import dev.pgtask.TaskContext;
import dev.pgtask.TaskKind;
import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.TestDatabase;
import java.math.BigDecimal;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.util.Optional;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.stereotype.Component;

/**
 * Payloads are mapped by pgtask's own Jackson 2 mapper ({@code com.fasterxml.jackson}), on every
 * Spring Boot line: on Boot 3.5 beside the application's Jackson 2 {@code ObjectMapper}, on Boot 4
 * beside the application's Jackson 3 {@code JsonMapper} ({@code tools.jackson}). The application's
 * {@code spring.jackson.*} settings configure the application's mapper, not pgtask's.
 */
class PayloadMappingTest {

  @TaskKind("spring.shipment")
  record Shipment(long orderId, Instant dueAt, LocalDate day, Optional<String> note, BigDecimal amount)
      implements TaskArgs {}

  @Component
  public static class ShipmentHandler implements PgTaskHandler<Shipment> {
    /** What the handler received, by order id. */
    static final Map<Long, Shipment> received = new ConcurrentHashMap<>();

    @Override
    public void handle(TaskContext ctx, Shipment shipment) {
      received.put(shipment.orderId(), shipment);
    }
  }

  @Configuration(proxyBeanMethods = false)
  @EnableAutoConfiguration
  @Import(ShipmentHandler.class)
  static class App {}

  static TestDatabase db;
  static ConfigurableApplicationContext app;

  @BeforeAll
  static void start() {
    db = TestDatabase.create("spring_payloads", false);
    app = SpringApps.run(db, App.class, "spring.jackson.property-naming-strategy=SNAKE_CASE");
  }

  @AfterAll
  static void stop() {
    if (app != null) {
      app.close();
    }
    db.close();
  }

  @Test
  void aPayloadWithJavaTimeOptionalAndDecimalFieldsReachesItsHandlerBeanUnchanged() throws Exception {
    Shipment sent = new Shipment(42, Instant.parse("2026-05-01T10:15:30.123456Z"), LocalDate.of(2026, 5, 1),
        Optional.of("fragile"), new BigDecimal("19.90"));
    app.getBean(PgTask.class).enqueue(sent);
    await().atMost(Duration.ofSeconds(30)).until(() -> ShipmentHandler.received.containsKey(42L));
    // (a decimal's trailing zeros are not kept: the payload goes through a JSON tree, compare by value)
    assertThat(ShipmentHandler.received.get(42L)).as("the payload the handler bean received")
        .usingRecursiveComparison().withComparatorForType(BigDecimal::compareTo, BigDecimal.class).isEqualTo(sent);
  }

  @Test
  void theApplicationsJacksonSettingsDoNotChangeHowPgtaskStoresPayloads() throws Exception {
    app.getBean(PgTask.class).enqueue(new Shipment(7, Instant.parse("2026-05-02T00:00:00Z"),
        LocalDate.of(2026, 5, 2), Optional.empty(), BigDecimal.ONE));
    assertThat(new Db(db).rows("SELECT string_agg(k, ',' ORDER BY k) FROM pgtask.task, jsonb_object_keys(payload) k"
        + " WHERE kind = 'spring.shipment' AND payload->>'orderId' = '7'"))
        .as("pgtask's mapper names the record's components as they are")
        .containsExactly("amount,day,dueAt,note,orderId");
    assertThat(applicationMapperWrites(new Shipment(7, null, null, Optional.empty(), BigDecimal.ONE)))
        .as("the application's own JSON mapper of this Boot line follows spring.jackson.*")
        .contains("\"order_id\"").doesNotContain("\"orderId\"");
  }

  /** JSON written by the application's auto-configured mapper: Jackson 3 on Boot 4, Jackson 2 on Boot 3.5. */
  private static String applicationMapperWrites(Object value) throws Exception {
    Class<?> type;
    try {
      type = Class.forName("tools.jackson.databind.json.JsonMapper"); // Boot 4
    } catch (ClassNotFoundException boot3) {
      type = com.fasterxml.jackson.databind.ObjectMapper.class;
    }
    Object mapper = app.getBean(type);
    return (String) mapper.getClass().getMethod("writeValueAsString", Object.class).invoke(mapper, value);
  }
}
