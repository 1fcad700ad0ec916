package dev.pgtask.docs;

// --- docs/testing.md: example ---
import static org.assertj.core.api.Assertions.assertThat;

import dev.pgtask.PgTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskArgs;
import dev.pgtask.TaskOptions;
import dev.pgtask.testing.DrainReport;
import dev.pgtask.testing.PgTaskTester;
import dev.pgtask.testing.TaskRun;
import java.sql.Connection;
import java.sql.PreparedStatement;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class InvoiceServiceTest {

  record SendInvoice(long invoiceId) implements TaskArgs {
    public String kind() { return "invoice.send"; }
  }

  DataSource dataSource = TestDataSources.migrated();   // your test database: a local server or Testcontainers
  PgTask pgtask = PgTask.create(dataSource);
  PgTaskWorker worker;
  PgTaskTester tester;
  boolean mailServerUp = true;

  @BeforeEach
  void setUp() {
    worker = PgTaskWorker.builder(dataSource)          // the same handlers as production; not started
        .concurrency(2)
        .handler("invoice.send", SendInvoice.class, (ctx, invoice) -> {
          try (PreparedStatement ps = ctx.connection().prepareStatement(
              "INSERT INTO invoice_mail (invoice_id) VALUES (?)")) {
            ps.setLong(1, invoice.invoiceId());
            ps.executeUpdate();
          }
          if (!mailServerUp) {
            throw new IllegalStateException("mail server down");
          }
        })
        .build();
    tester = PgTaskTester.of(worker);
  }

  @Test
  void placingAnInvoiceEnqueuesItsMailInTheSameTransaction() throws Exception {
    try (Connection tx = dataSource.getConnection()) {
      tx.setAutoCommit(false);
      pgtask.enqueue(tx, new SendInvoice(42), TaskOptions.defaults().withTenant("acme"));
      tester.enqueued(tx).ofKind("invoice.send").forTenant("acme")
          .withPayload(SendInvoice.class, p -> p.invoiceId() == 42)
          .assertSingle();                                // seen inside the open transaction
      tx.rollback();
    }
    tester.enqueued().ofKind("invoice.send").assertNone();   // rolled back with it
  }

  @Test
  void theMailIsSentAndAFailureIsRetried() throws Exception {
    long id = pgtask.enqueue(new SendInvoice(43));
    mailServerUp = false;

    TaskRun failed = tester.runTask(id);                  // runs now, in this thread, as a worker would
    assertThat(failed.result()).isEqualTo(TaskRun.Result.RETRY_SCHEDULED);
    assertThat(failed.error()).contains("mail server down");
    assertThat(mailRows(43)).isZero();                    // the failed attempt's insert was rolled back

    mailServerUp = true;
    tester.runTask(id);                                   // the retry, without waiting for its backoff
    assertThat(mailRows(43)).isEqualTo(1);
    DrainReport rest = tester.drain();                    // everything else that is due now
    assertThat(rest.runs()).allMatch(r -> r.result() == TaskRun.Result.COMPLETED);
  }
  // --- end of docs/testing.md: example ---

  long mailRows(long invoiceId) throws Exception {
    try (Connection c = dataSource.getConnection();
        var rs = c.createStatement().executeQuery("SELECT count(*) FROM invoice_mail WHERE invoice_id = " + invoiceId)) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
