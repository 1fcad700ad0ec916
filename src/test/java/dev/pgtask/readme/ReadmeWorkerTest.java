package dev.pgtask.readme;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.PgTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.TaskArgs;
import dev.pgtask.TaskOptions;
import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.TestDatabase;
import java.sql.PreparedStatement;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The README's worker example, compiled and run: keep the two in step. */
class ReadmeWorkerTest {

  record SendInvoice(long invoiceId) implements TaskArgs {
    public String kind() { return "invoice.send"; }
  }

  static PgTaskWorker readmeWorker(HikariDataSource dataSource) {
    // --- README: worker ---
    PgTaskWorker worker = PgTaskWorker.builder(dataSource)   // a HikariDataSource with more connections than concurrency
        .queues("default")
        .concurrency(10)
        .handler("invoice.send", SendInvoice.class, (ctx, invoice) -> {
          // inside the task's transaction: this row commits together with the task's completion
          try (PreparedStatement ps = ctx.connection().prepareStatement(
              "INSERT INTO invoice_mail (invoice_id, idempotency_key) VALUES (?, ?)")) {
            ps.setLong(1, invoice.invoiceId());
            ps.setString(2, ctx.idempotencyKey());   // stable across retries: pass it to external services
            ps.executeUpdate();
          }
        })
        .build()
        .start();
    // --- end of README: worker ---
    return worker;
  }

  @Test
  void readmeWorkerRunsTheQuickstartsTask() throws Exception {
    try (TestDatabase db = TestDatabase.create("readme_worker")) {
      Db sql = new Db(db);
      sql.exec("CREATE TABLE invoice_mail (invoice_id bigint, idempotency_key text)");
      try (HikariDataSource dataSource = db.pool(12)) {
        long id = PgTask.create(dataSource).enqueue(new SendInvoice(42), TaskOptions.defaults().withTenant("acme"));
        PgTaskWorker worker = readmeWorker(dataSource);
        try {
          await().atMost(Duration.ofSeconds(20)).until(() -> sql.count("SELECT count(*) FROM invoice_mail") == 1);
        } finally {
          worker.close();   // stops claiming, lets running tasks finish (20 s by default), releases the rest
        }
        assertThat(sql.text("SELECT invoice_id || ' ' || idempotency_key FROM invoice_mail")).isEqualTo("42 pgtask-" + id);
        assertThat(sql.text("SELECT state FROM pgtask.tasks WHERE id = " + id)).isEqualTo("completed");
      }
    }
  }
}
