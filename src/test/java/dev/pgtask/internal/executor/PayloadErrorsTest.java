package dev.pgtask.internal.executor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchException;

import com.fasterxml.jackson.databind.DeserializationFeature;
import dev.pgtask.PgTaskWorker;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The discard text of a payload that does not fit: the field and the problem, never a value of the payload. */
class PayloadErrorsTest {

  record Counts(Map<String, Integer> perSku) {}

  record Positive(int n) {
    Positive {
      if (n <= 0) {
        throw new IllegalArgumentException("n must be positive, was " + n);
      }
    }
  }

  record Plain(int n) {}

  private static String describe(Class<?> type, String json) {
    var mapper = PgTaskWorker.defaultObjectMapper().enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);
    Exception e = catchException(() -> mapper.readValue(json, type));
    assertThat(e).as("deserializing %s", json).isNotNull();
    return PayloadErrors.describe(type, e);
  }

  @Test
  void aMapKeyIsInputAndIsNotShown() {
    assertThat(describe(Counts.class, "{\"perSku\": {\"SECRET-KEY\": \"SECRET-VALUE\"}}"))
        .endsWith(": $.perSku[*] has the wrong type: expected an integer (Integer), got a string")
        .doesNotContain("SECRET");
  }

  @Test
  void aValueRejectedByTheRecordsConstructorIsNamedWithoutTheConstructorsMessage() {
    assertThat(describe(Positive.class, "{\"n\": -4711}"))
        .contains("was rejected by the constructor of Positive (IllegalArgumentException)")
        .doesNotContain("4711");
  }

  @Test
  void anUnknownPropertyIsNamedWhenTheMapperRejectsUnknownProperties() {
    assertThat(describe(Plain.class, "{\"n\": 1, \"extra\": \"SECRET\"}"))
        .endsWith(": $.extra is not a property of Plain").doesNotContain("SECRET");
  }

  @Test
  void aNumberTooLargeForItsFieldIsNamedWithoutTheNumber() {
    assertThat(describe(Plain.class, "{\"n\": 98765432109876543210}"))
        .contains("$.n ").doesNotContain("98765432109876543210");
  }
}
