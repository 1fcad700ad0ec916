package dev.pgtask.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgtask.NewTask;
import dev.pgtask.TaskOptions;
import dev.pgtask.testsupport.QueueDatabase;
import dev.pgtask.testsupport.WorkerFixture;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@code pgtask show ID} prints a task's state, payload, explanation and every recorded attempt with
 * its full error, stack trace and causes included, control characters escaped; {@code --json} prints
 * {@code pgtask.task_detail(ID)}; a missing task exits 4.
 */
class ShowCommandTest {

  private static final ObjectMapper JSON = new ObjectMapper();

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("show_command", 6);

  @RegisterExtension
  final WorkerFixture workers = WorkerFixture.on(queue);

  static void sendMail() {
    throw new IllegalStateException("smtp refused\u001b[31m", new java.io.IOException("connection reset"));
  }

  @Test
  void showPrintsEachAttemptsFullErrorAndTheJsonIsTaskDetail() throws Exception {
    workers.start(workers.builder().concurrency(1).retryBackoff(Duration.ofMillis(1), Duration.ofMillis(5))
        .handler("show.mail", Map.class, (ctx, p) -> sendMail()));
    long id = queue.pgtask().enqueue(NewTask.of("show.mail", Map.of("to", "ops@example.com"),
        TaskOptions.defaults().withMaxAttempts(2)));
    workers.awaitState(id, "discarded", Duration.ofSeconds(20));

    CliRun text = CliRun.of("show", Long.toString(id), "--url", queue.database().fullUrl());
    assertThat(text.exitCode()).as("stderr: %s", text.err()).isEqualTo(ExitCodes.OK);
    assertThat(text.out())
        .contains("task " + id + ": show.mail in queue default")
        .contains("state:       discarded (attempt 2 of 2, priority 0)")
        .contains("explanation: task " + id + " finished as discarded")
        .contains("payload:     {\"to\": \"ops@example.com\"}")
        .contains("  #1 failed on ").contains("  #2 discarded on ")
        .contains("      java.lang.IllegalStateException: smtp refused\\u001B[31m")
        .contains("          at " + ShowCommandTest.class.getName() + ".sendMail(")
        .contains("      Caused by: java.io.IOException: connection reset")
        .as("no raw escape character reaches the terminal").doesNotContain("\u001b");

    CliRun json = CliRun.of("show", Long.toString(id), "--json", "--url", queue.database().fullUrl());
    assertThat(json.exitCode()).isEqualTo(ExitCodes.OK);
    JsonNode printed = JSON.readTree(json.out());
    assertThat(printed).isEqualTo(JSON.readTree(queue.sql().text("SELECT pgtask.task_detail(" + id + ")::text")));
    assertThat(printed.path("attempts").get(0).path("error_detail").asText()).contains("Caused by: java.io.IOException");

    CliRun missing = CliRun.of("show", "987654321", "--url", queue.database().fullUrl());
    assertThat(missing.exitCode()).as("exit code for a missing task").isEqualTo(ExitCodes.NOT_FOUND);
    assertThat(missing.out()).startsWith("task 987654321 does not exist");
  }
}
