package dev.pgtask.internal;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class SecretsTest {

  @Test
  void aUrlPasswordParameterIsMaskedAndTheRestOfTheMessageKept() {
    assertThat(Secrets.redact("Unable to parse URL jdbc:postgresql://h:1/db?user=u&password=p%40ss&ssl=true (x)"))
        .isEqualTo("Unable to parse URL jdbc:postgresql://h:1/db?user=u&password=***&ssl=true (x)");
    assertThat(Secrets.redact("jdbc:postgresql://h/db?PASSWORD=abc")).isEqualTo("jdbc:postgresql://h/db?PASSWORD=***");
  }

  @Test
  void aUriUserInfoPasswordIsMasked() {
    assertThat(Secrets.redact("at postgresql://alice:s3cr%2Ft@db:5432/x failed"))
        .isEqualTo("at postgresql://alice:***@db:5432/x failed");
  }

  @Test
  void aKnownPasswordIsMaskedWhereverTheDriverQuotesIt() {
    assertThat(Secrets.redact("login with 'pa ss&w' failed, pa+ss%26w too", "pa ss&w"))
        .doesNotContain("pa ss&w").doesNotContain("pa+ss%26w");
  }
}
