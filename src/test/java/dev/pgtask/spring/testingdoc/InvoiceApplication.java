package dev.pgtask.spring.testingdoc;

import dev.pgtask.TaskContext;
import dev.pgtask.spring.PgTaskHandler;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;

/** The application of docs/testing.md's Spring example: one handler bean that writes through JdbcTemplate. */
@SpringBootApplication
public class InvoiceApplication {

  /** Writes a row, then fails its first attempt when the payload asks. */
  @Component
  public static class SendInvoiceHandler implements PgTaskHandler<SendInvoice> {
    private final JdbcTemplate jdbc;

    public SendInvoiceHandler(JdbcTemplate jdbc) {
      this.jdbc = jdbc;
    }

    @Override
    public void handle(TaskContext ctx, SendInvoice task) {
      jdbc.update("INSERT INTO sent_invoice (invoice_id, attempt) VALUES (?, ?)", task.invoiceId(), ctx.attempt());
      if (task.failFirst() && ctx.attempt() == 1) {
        throw new IllegalStateException("the mail server refused the first attempt");
      }
    }
  }
}
