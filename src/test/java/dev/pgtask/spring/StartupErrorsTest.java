package dev.pgtask.spring;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgtask.TaskArgs;
import dev.pgtask.TaskContext;
import dev.pgtask.TaskKind;
import dev.pgtask.testsupport.TestDatabase;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** Handler beans that cannot be registered fail the startup, naming the beans. */
class StartupErrorsTest {

  @TaskKind("spring.dup")
  record Dup(int n) implements TaskArgs {}

  record NoKind(int n) implements TaskArgs {}

  @Configuration(proxyBeanMethods = false)
  @EnableAutoConfiguration
  static class TwoHandlersOneKind {
    @Bean
    PgTaskHandler<Dup> firstDupHandler() {
      return new PgTaskHandler<Dup>() {
        @Override
        public void handle(TaskContext ctx, Dup d) {}

        @Override
        public String kind() {
          return "spring.dup";
        }
      };
    }

    @Bean
    PgTaskHandler<Dup> secondDupHandler() {
      return new PgTaskHandler<Dup>() {
        @Override
        public void handle(TaskContext ctx, Dup d) {}

        @Override
        public String kind() {
          return "spring.dup";
        }
      };
    }
  }

  public static class NoKindHandler implements PgTaskHandler<NoKind> {
    @Override
    public void handle(TaskContext ctx, NoKind n) {}
  }

  @Configuration(proxyBeanMethods = false)
  @EnableAutoConfiguration
  static class UnannotatedPayload {
    @Bean
    NoKindHandler noKindHandler() {
      return new NoKindHandler();
    }
  }

  @Test
  void twoHandlerBeansForOneKindFailTheStartupNamingBoth() {
    try (TestDatabase db = TestDatabase.create("spring_errors")) {
      assertThatThrownBy(() -> SpringApps.run(db, TwoHandlersOneKind.class).close()).rootCause()
          .hasMessageContaining("kind 'spring.dup' has two handler beans, 'firstDupHandler' and 'secondDupHandler'");
      assertThatThrownBy(() -> SpringApps.run(db, UnannotatedPayload.class).close()).rootCause()
          .hasMessageContaining("handler bean 'noKindHandler'")
          .hasMessageContaining(NoKind.class.getName() + " declares no kind: annotate it with @TaskKind");
    }
  }
}
