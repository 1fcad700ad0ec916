package dev.pgtask.readme;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgtask.PgTask;
import dev.pgtask.TaskArgs;
import dev.pgtask.TaskOptions;
import dev.pgtask.migrate.Migrations;
import dev.pgtask.testsupport.TestDatabase;
import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import javax.sql.DataSource;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The README's quickstart, compiled and run: keep the two in step. */
class ReadmeQuickstartTest {

  // --- README: quickstart ---
  record SendInvoice(long invoiceId) implements TaskArgs {
    public String kind() { return "invoice.send"; }
  }

  static void quickstart(DataSource dataSource) throws Exception {
    Migrations.apply(dataSource);                 // creates or updates the pgtask schema
    PgTask pgtask = PgTask.create(dataSource);

    try (Connection tx = dataSource.getConnection()) {
      tx.setAutoCommit(false);
      try (PreparedStatement ps = tx.prepareStatement("INSERT INTO invoice (id, amount) VALUES (?, ?)")) {
        ps.setLong(1, 42);
        ps.setBigDecimal(2, new BigDecimal("99.00"));
        ps.executeUpdate();
      }
      pgtask.enqueue(tx, new SendInvoice(42), TaskOptions.defaults().withTenant("acme"));
      tx.commit();                                // invoice and task exist together, or neither does
    }
  }
  // --- end of README: quickstart ---

  private static TestDatabase db;

  @BeforeAll
  static void createDatabase() throws Exception {
    db = TestDatabase.create("readme", false);
    try (Connection c = db.connect(); PreparedStatement ps = c.prepareStatement(
        "CREATE TABLE invoice (id bigint PRIMARY KEY, amount numeric NOT NULL)")) {
      ps.execute();
    }
  }

  @AfterAll
  static void dropDatabase() {
    db.close();
  }

  @Test
  void readmeQuickstartStoresTheInvoiceAndItsTaskTogether() throws Exception {
    quickstart(db.dataSource());
    // README: with jOOQ, the jOOQ transaction's connection
    PgTask pgtask = PgTask.create(db.dataSource());
    DSL.using(db.dataSource(), SQLDialect.POSTGRES).transaction(cfg ->
        cfg.dsl().connection(c -> pgtask.enqueue(c, new SendInvoice(43))));
    try (Connection c = db.connect(); PreparedStatement ps = c.prepareStatement("""
        SELECT (SELECT count(*) FROM invoice),
               (SELECT count(*) FROM pgtask.tasks WHERE kind = 'invoice.send' AND tenant = 'acme'),
               (SELECT count(*) FROM pgtask.tasks WHERE kind = 'invoice.send')""");
        ResultSet rs = ps.executeQuery()) {
      rs.next();
      assertThat(rs.getLong(1)).as("invoices stored by the quickstart").isEqualTo(1);
      assertThat(rs.getLong(2)).as("tenant acme's invoice.send tasks").isEqualTo(1);
      assertThat(rs.getLong(3)).as("invoice.send tasks after the jOOQ twin").isEqualTo(2);
    }
  }

  @Test
  void readmeSqlExamplesRun() throws Exception {
    Migrations.apply(db.dataSource());
    try (Connection c = db.connect(); var st = c.createStatement()) {
      // --- README: SQL ---
      st.execute("SELECT pgtask.enqueue(kind => 'invoice.send', payload => '{\"invoiceId\": 42}', tenant => 'acme')");
      st.execute("""
          SELECT pgtask.enqueue(kind => 'report.build', queue => 'reports',
                                run_at => now() + interval '1 hour', dedupe_key => 'report:2026-01')""");
      st.execute("""
          SELECT * FROM pgtask.enqueue_batch(kinds    => ARRAY['mail.send', 'mail.send'],
                                             payloads => ARRAY['{"to": "a@example.com"}', '{"to": "b@example.com"}']::jsonb[])""");
      // --- end of README: SQL ---
      try (ResultSet rs = st.executeQuery("SELECT state FROM pgtask.tasks WHERE kind = 'report.build'")) {
        rs.next();
        assertThat(rs.getString(1)).as("the README's report task shows as").isEqualTo("scheduled");
      }
    }
  }
}
