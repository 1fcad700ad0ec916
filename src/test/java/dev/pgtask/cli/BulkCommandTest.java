package dev.pgtask.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgtask.testsupport.QueueDatabase;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@code pgtask retry|cancel|delete} with filters: the operation on every matched task, per state
 * changed and skipped, a dry run first that changes nothing; an ID alone still names one task; an ID
 * with filters, or neither, is a usage error.
 */
class BulkCommandTest {

  private static final ObjectMapper JSON = new ObjectMapper();

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("bulk_cli", 4);

  @BeforeEach
  void tasks() throws Exception {
    queue.sql().exec("DELETE FROM pgtask.task");
    queue.sql().exec("SELECT pgtask.enqueue('cli.mail', '{}', 'parked') FROM generate_series(1, 5)");
    queue.sql().exec("UPDATE pgtask.task SET state = 'discarded', attempt = 1, finished_at = now() - interval '10 minutes', "
        + "errors = '[{\"attempt\": 1, \"error\": \"java.net.SocketTimeoutException: read timed out\"}]' "
        + "WHERE id IN (SELECT id FROM pgtask.task ORDER BY id LIMIT 3)");
    queue.sql().exec("UPDATE pgtask.task SET state = 'completed', finished_at = now() WHERE state = 'available' "
        + "AND id = (SELECT max(id) FROM pgtask.task)");
  }

  private String states() throws Exception {
    return String.join(",", queue.sql().rows("SELECT state || ' ' || count(*) FROM pgtask.tasks GROUP BY state ORDER BY state"));
  }

  @Test
  void retryByFilterPrintsADryRunFirstThenRetriesOnlyWhatItMay() throws Exception {
    String url = queue.database().fullUrl();
    String before = states();
    CliRun dry = CliRun.of("retry", "--kind", "cli.mail", "--since", "1h", "--dry-run", "--url", url);
    assertThat(dry.exitCode()).as("stderr: %s", dry.err()).isEqualTo(ExitCodes.OK);
    assertThat(dry.out()).containsPattern("STATE\\s+WOULD_CHANGE\\s+WOULD_SKIP")
        .containsPattern("available\\s+0\\s+1").containsPattern("completed\\s+0\\s+1").containsPattern("discarded\\s+3\\s+0")
        .contains("dry run: 3 task(s) would be retried, 2 skipped; nothing changed");
    assertThat(states()).as("after the dry run").isEqualTo(before);

    CliRun run = CliRun.of("retry", "--state", "discarded", "--error-like", "%timed out%", "--url", url);
    assertThat(run.exitCode()).as("stderr: %s", run.err()).isEqualTo(ExitCodes.OK);
    assertThat(run.out()).containsPattern("discarded\\s+3\\s+0").contains("3 task(s) retried, 0 skipped");
    assertThat(states()).isEqualTo("available 4,completed 1");

    JsonNode json = JSON.readTree(CliRun.of("delete", "--kind", "cli.mail", "--json", "--dry-run", "--url", url).out());
    assertThat(json.get("dry_run").asBoolean()).isTrue();
    assertThat(json.get("changed").asLong()).isEqualTo(5);
    assertThat(json.get("states").get(0).get("state").asText()).isEqualTo("available");
  }

  @Test
  void fromAndUntilChooseTheTasksLastActiveInTheRangeAndABadRangeIsAUsageError() throws Exception {
    String url = queue.database().fullUrl();
    queue.sql().exec("UPDATE pgtask.task SET finished_at = timestamptz '2026-12-04 10:00:00+00' + (id - (SELECT min(id) FROM pgtask.task)) "
        + "* interval '30 minutes' WHERE state = 'discarded'"); // 10:00, 10:30, 11:00
    CliRun dry = CliRun.of("retry", "--from", "2026-12-04T10:00:00Z", "--until", "2026-12-04T12:00:00+01:00", "--dry-run",
        "--url", url);
    assertThat(dry.exitCode()).as("stderr: %s", dry.err()).isEqualTo(ExitCodes.OK);
    assertThat(dry.out()).as("10:00 and 10:30, not 11:00 (until is exclusive)").containsPattern("discarded\\s+2\\s+0")
        .contains("dry run: 2 task(s) would be retried, 0 skipped; nothing changed");
    String before = states();
    for (String[] bad : new String[][] {
        {"--from", "2026-12-04T10:00", "'2026-12-04T10:00' is not an ISO-8601 instant with a zone or offset"},
        {"--until", "yesterday", "'yesterday' is not an ISO-8601 instant"},
        {"--from", "2026-12-04T11:00:00Z --until 2026-12-04T10:00:00Z", "--from must be before --until"}}) {
      List<String> args = new java.util.ArrayList<>(List.of("delete"));
      args.add(bad[0]);
      args.addAll(List.of(bad[1].split(" ")));
      args.addAll(List.of("--url", url));
      CliRun r = CliRun.of(args.toArray(String[]::new));
      assertThat(r.exitCode()).as(String.join(" ", args)).isEqualTo(ExitCodes.USAGE);
      assertThat(r.err()).as(String.join(" ", args)).contains(bad[2]);
    }
    assertThat(states()).as("after the refused commands").isEqualTo(before);
  }

  @Test
  void anIdStillNamesOneTaskAndAnIdWithFiltersOrNothingIsAUsageError() throws Exception {
    String url = queue.database().fullUrl();
    String id = queue.sql().text("SELECT min(id) FROM pgtask.task WHERE state = 'discarded'");
    CliRun one = CliRun.of("retry", id, "--url", url);
    assertThat(one.exitCode()).as("stderr: %s", one.err()).isEqualTo(ExitCodes.OK);
    assertThat(one.out().strip()).isEqualTo("task " + id + " is available again");

    CliRun both = CliRun.of("cancel", id, "--kind", "cli.mail", "--url", url);
    assertThat(both.exitCode()).isEqualTo(ExitCodes.USAGE);
    assertThat(both.err()).contains("give either a task ID or filters");
    CliRun neither = CliRun.of("delete", "--url", url);
    assertThat(neither.exitCode()).isEqualTo(ExitCodes.USAGE);
    assertThat(neither.err()).contains("at least one filter");
    assertThat(states()).as("after the refused commands").isEqualTo("available 2,completed 1,discarded 2");
  }
}
