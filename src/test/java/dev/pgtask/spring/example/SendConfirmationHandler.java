package dev.pgtask.spring.example;

import dev.pgtask.TaskContext;
import dev.pgtask.spring.PgTaskHandler;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;

/**
 * Runs {@link SendConfirmation} tasks. Found at startup because it is a bean; its kind comes from
 * the payload record. The insert joins the task's transaction: it commits with the task's
 * completion, and a failed attempt leaves no row behind.
 */
@Component
public class SendConfirmationHandler implements PgTaskHandler<SendConfirmation> {

  private final JdbcTemplate jdbc;

  public SendConfirmationHandler(JdbcTemplate jdbc) {
    this.jdbc = jdbc;
  }

  @Override
  public void handle(TaskContext ctx, SendConfirmation task) {
    String customer = jdbc.queryForObject("SELECT customer FROM orders WHERE id = ?", String.class, task.orderId());
    // a mail service would be called here, with ctx.idempotencyKey() so a retry sends no second mail
    jdbc.update("INSERT INTO confirmations (order_id, recipient, idempotency_key) VALUES (?, ?, ?)",
        task.orderId(), customer, ctx.idempotencyKey());
  }
}
