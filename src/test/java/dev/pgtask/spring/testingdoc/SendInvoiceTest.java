package dev.pgtask.spring.testingdoc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgtask.PgTask;
import dev.pgtask.spring.PgTaskWorkerLifecycle;
import dev.pgtask.testing.PgTaskTester;
import dev.pgtask.testing.TaskRun;
import dev.pgtask.testsupport.TestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** docs/testing.md's Spring example, as it is there apart from the database it is given. */
@SpringBootTest(classes = InvoiceApplication.class,
    properties = {"pgtask.worker.auto-startup=false", "pgtask.worker.retry-backoff-base=0s"})
class SendInvoiceTest {
  static final TestDatabase db = TestDatabase.create("spring_testingdoc", false);

  @DynamicPropertySource
  static void database(DynamicPropertyRegistry registry) {
    registry.add("spring.datasource.url", db::url);
    registry.add("spring.datasource.username", db::user);
    registry.add("spring.datasource.password", () -> db.password() == null ? "" : db.password());
  }

  @AfterAll
  static void dropDatabase() {
    db.close();
  }

  @Autowired PgTask pgTask;
  @Autowired PgTaskWorkerLifecycle pgTaskWorker;
  @Autowired JdbcTemplate jdbc;

  @Test
  void aFailedAttemptLeavesNoRowAndTheRetryCommitsOne() {
    jdbc.execute("CREATE TABLE sent_invoice (invoice_id bigint, attempt int)");
    PgTaskTester tester = pgTaskWorker.tester();
    long id = pgTask.enqueue(new SendInvoice(200, true));     // the handler bean fails attempt 1 after its write

    assertThat(tester.runTask(id).result()).isEqualTo(TaskRun.Result.RETRY_SCHEDULED);
    assertThat(jdbc.queryForObject("SELECT count(*) FROM sent_invoice", Long.class)).isZero();

    tester.drain().assertAllCompleted();                       // the retry is due at once (backoff 0s)
    assertThat(jdbc.queryForObject("SELECT count(*) FROM sent_invoice", Long.class)).isOne();
  }
}
