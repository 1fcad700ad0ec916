package dev.pgtask.readme;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgtask.InvalidScheduleException;
import dev.pgtask.PgTask;
import dev.pgtask.Schedule;
import dev.pgtask.TaskArgs;
import dev.pgtask.TaskUpdate;
import dev.pgtask.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Instant;
import java.util.Map;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** docs/migration.md's replacements for the removed and changed signatures, compiled and run: keep the two in step. */
class MigrationGuideTest {

  record SendInvoice(long invoiceId) implements TaskArgs {
    public String kind() {
      return "invoice.send";
    }
  }

  private static TestDatabase db;
  private static PgTask pgtask;

  @BeforeAll
  static void createDatabase() throws Exception {
    db = TestDatabase.create("migration_guide");
    try (Connection c = db.connect(); PreparedStatement ps = c.prepareStatement("CREATE TABLE invoice (id bigint PRIMARY KEY)")) {
      ps.execute();
    }
    pgtask = PgTask.create(db.dataSource());
  }

  @AfterAll
  static void dropDatabase() {
    db.close();
  }

  @Test
  void aJooqTransactionEnqueuesThroughItsConnectionAndTheTaskCommitsOrRollsBackWithIt() throws Exception {
    DSLContext dsl = DSL.using(db.dataSource(), SQLDialect.POSTGRES);
    // --- docs/migration.md: enqueue with jOOQ ---
    dsl.transaction(cfg -> {
      cfg.dsl().execute("INSERT INTO invoice (id) VALUES (?)", 42);
      cfg.dsl().connection(c -> pgtask.enqueue(c, new SendInvoice(42)));
    });

    // the id, or a batch's ids:
    long id = dsl.transactionResult(cfg -> cfg.dsl().connectionResult(c -> pgtask.enqueue(c, new SendInvoice(43))));
    // --- end of docs/migration.md ---
    class Rollback extends RuntimeException {}
    try {
      dsl.transaction(cfg -> {
        cfg.dsl().execute("INSERT INTO invoice (id) VALUES (?)", 44);
        cfg.dsl().connection(c -> pgtask.enqueue(c, new SendInvoice(44)));
        throw new Rollback();
      });
    } catch (Rollback expected) {
      // the jOOQ transaction rolled back
    }
    assertThat(rows("SELECT payload->>'invoiceId' FROM pgtask.task WHERE queue = 'default' ORDER BY id"))
        .as("tasks of the committed jOOQ transactions only").isEqualTo("42,43");
    assertThat(rows("SELECT id FROM invoice ORDER BY id")).as("invoices committed with them").isEqualTo("42");
    assertThat(rows("SELECT payload->>'invoiceId' FROM pgtask.task WHERE id = " + id)).isEqualTo("43");
  }

  @Test
  void anUpdateChangesWhatItSetsAndLeavesTheRest() throws Exception {
    long id = pgtask.enqueue(new SendInvoice(1), dev.pgtask.TaskOptions.defaults().withQueue("migration_update")
        .withRunAt(Instant.parse("2099-01-01T00:00:00Z")));
    Object newPayload = Map.of("invoiceId", 2);
    Instant runAt = Instant.parse("2100-01-01T00:00:00Z");
    // --- docs/migration.md: update ---
    pgtask.update(id, TaskUpdate.payload(newPayload).withRunAt(runAt));
    pgtask.update(id, TaskUpdate.priority(5));
    // --- end of docs/migration.md ---
    assertThat(rows("SELECT payload->>'invoiceId' || ' ' || (run_at = '2100-01-01T00:00:00Z') || ' ' || priority "
        + "FROM pgtask.task WHERE id = " + id)).isEqualTo("2 true 5");
    assertThatThrownBy(() -> TaskUpdate.payload(null)).as("no null means 'unchanged'").isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> TaskUpdate.priority(1).withRunAt(null)).isInstanceOf(NullPointerException.class);
  }

  @Test
  void anInvalidCronExpressionIsRefusedAtDeclarationWithTheDatabasesMessage() {
    String refused = null;
    // --- docs/migration.md: schedules ---
    Schedule nightly = Schedule.of("nightly-report", "61 30 2 * * *", "report.build"); // no check here
    try {
      pgtask.schedule(nightly);                                                        // the database checks it
    } catch (InvalidScheduleException e) {
      refused = e.constraint() + ": " + e.getMessage();                              // schedule_cron: pgtask: ...
    }
    // --- end of docs/migration.md ---
    assertThat(refused).isEqualTo("schedule_cron: pgtask: invalid schedule: cron expression \"61 30 2 * * *\": "
        + "second field: 61 is out of range 0-59");
  }

  private static String rows(String sql) throws Exception {
    StringBuilder out = new StringBuilder();
    try (Connection c = db.connect(); PreparedStatement ps = c.prepareStatement(sql); ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        out.append(out.length() == 0 ? "" : ",").append(rs.getString(1));
      }
    }
    return out.toString();
  }
}
