package dev.pgtask.spring.example;

import dev.pgtask.PgTask;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/** Places orders: the order row and its confirmation task commit together, or neither does. */
@Service
public class OrderService {

  private final JdbcTemplate jdbc;
  private final PgTask pgTask;

  public OrderService(JdbcTemplate jdbc, PgTask pgTask) {
    this.jdbc = jdbc;
    this.pgTask = pgTask;
  }

  /** Stores the order and enqueues its confirmation, in the caller's (or a new) transaction. */
  @Transactional
  public long placeOrder(String customer, long cents) {
    Long orderId = jdbc.queryForObject(
        "INSERT INTO orders (customer, cents) VALUES (?, ?) RETURNING id", Long.class, customer, cents);
    pgTask.enqueue(new SendConfirmation(orderId)); // joins this transaction
    if (cents <= 0) {
      // after the enqueue on purpose: the rollback takes the task with it
      throw new IllegalArgumentException("an order must cost something");
    }
    return orderId;
  }
}
