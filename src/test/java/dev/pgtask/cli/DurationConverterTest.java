package dev.pgtask.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine.TypeConversionException;

class DurationConverterTest {

  private final DurationConverter converter = new DurationConverter();

  @Test
  void readsAWholeNumberWithAUnit() {
    assertThat(converter.convert("500ms")).isEqualTo(Duration.ofMillis(500));
    assertThat(converter.convert("8s")).isEqualTo(Duration.ofSeconds(8));
    assertThat(converter.convert("2m")).isEqualTo(Duration.ofMinutes(2));
    assertThat(converter.convert("1h")).isEqualTo(Duration.ofHours(1));
    assertThat(converter.convert("1d")).isEqualTo(Duration.ofDays(1));
    assertThat(converter.convert("0s")).isEqualTo(Duration.ZERO);
  }

  @Test
  void toleratesCaseAndSpaces() {
    assertThat(converter.convert(" 8S ")).isEqualTo(Duration.ofSeconds(8));
    assertThat(converter.convert("250 ms")).isEqualTo(Duration.ofMillis(250));
  }

  @Test
  void readsIso8601() {
    assertThat(converter.convert("PT8S")).isEqualTo(Duration.ofSeconds(8));
    assertThat(converter.convert("pt0.5s")).isEqualTo(Duration.ofMillis(500));
    assertThat(converter.convert("PT1H30M")).isEqualTo(Duration.ofMinutes(90));
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "abc", "5 seconds", "1.5s", "-3s", "s", "PTXS", "5ms5"})
  void rejectsWhatIsNotADurationWithAHint(String input) {
    assertThatThrownBy(() -> converter.convert(input))
        .isInstanceOf(TypeConversionException.class)
        .hasMessageContaining("'" + input + "' is not a duration")
        .hasMessageContaining("500ms, 8s, 2m, 1h")
        .hasMessageContaining("PT8S");
  }

  @Test
  void saysThatABareNumberNeedsAUnit() {
    assertThatThrownBy(() -> converter.convert("500"))
        .isInstanceOf(TypeConversionException.class)
        .hasMessageContaining("a unit is required");
  }
}
