package dev.pgtask;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.pgtask.testsupport.TestDatabase;
import java.sql.Connection;
import java.util.List;
import java.util.stream.Stream;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every enqueue against a database that was never migrated says that the pgtask schema is missing
 * and how to create it, like the worker and the CLI do, instead of passing on
 * {@code schema "pgtask" does not exist}.
 */
class UnmigratedDatabaseTest {

  record Ping(int n) implements TaskArgs {
    @Override
    public String kind() {
      return "ping";
    }
  }

  private static TestDatabase db;
  private static PgTask pgtask;

  @BeforeAll
  static void createDatabase() {
    db = TestDatabase.create("unmigrated", false);
    pgtask = PgTask.create(db.dataSource());
  }

  @AfterAll
  static void dropDatabase() {
    db.close();
  }

  interface Enqueue {
    void on(PgTask pgtask, Connection tx) throws Exception;
  }

  static Stream<Arguments> everyEnqueue() {
    NewTask task = NewTask.of(new Ping(1));
    return Stream.of(
        Arguments.of("enqueue(args)", (Enqueue) (p, tx) -> p.enqueue(new Ping(1))),
        Arguments.of("enqueue(args, options)", (Enqueue) (p, tx) -> p.enqueue(new Ping(1), TaskOptions.defaults())),
        Arguments.of("enqueue(task)", (Enqueue) (p, tx) -> p.enqueue(task)),
        Arguments.of("enqueue(tx, args)", (Enqueue) (p, tx) -> p.enqueue(tx, new Ping(1))),
        Arguments.of("enqueue(tx, args, options)", (Enqueue) (p, tx) -> p.enqueue(tx, new Ping(1), TaskOptions.defaults())),
        Arguments.of("enqueue(tx, task)", (Enqueue) (p, tx) -> p.enqueue(tx, task)),
        Arguments.of("enqueueAll(tasks)", (Enqueue) (p, tx) -> p.enqueueAll(List.of(task, task))),
        Arguments.of("enqueueAll(tx, tasks)", (Enqueue) (p, tx) -> p.enqueueAll(tx, List.of(task, task))));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("everyEnqueue")
  void anEnqueueIntoAnUnmigratedDatabaseSaysTheSchemaIsMissingAndHowToMigrate(String variant, Enqueue enqueue)
      throws Exception {
    try (Connection tx = db.connect()) {
      tx.setAutoCommit(false);
      Throwable thrown = catchThrowable(() -> enqueue.on(pgtask, tx));
      tx.rollback();
      assertMissingSchemaError(thrown, "3F000");
    }
  }

  @Test
  void anEnqueueIntoASchemaWithoutPgtasksFunctionsSaysItIsNotMigrated() throws Exception {
    // a pgtask schema without the functions (created by hand, or an older one): undefined_function
    try (Connection tx = db.connect()) {
      tx.setAutoCommit(false);
      try (var st = tx.createStatement()) {
        st.execute("CREATE SCHEMA pgtask");
      }
      ThrowingCallable one = () -> pgtask.enqueue(tx, new Ping(1));
      Throwable thrown = catchThrowable(one);
      tx.rollback();
      assertMissingSchemaError(thrown, "42883");
    }
  }

  private static void assertMissingSchemaError(Throwable thrown, String sqlState) {
    assertThat(thrown).isInstanceOf(PgTaskException.class)
        .hasMessageContaining("the pgtask schema is missing")
        .hasMessageContaining("Migrations.apply(dataSource)")
        .hasMessageContaining("pgtask migrate")
        .hasMessageContaining("SQLSTATE " + sqlState);
  }
}
