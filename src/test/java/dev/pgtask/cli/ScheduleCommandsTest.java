package dev.pgtask.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.TestDatabase;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** {@code pgtask schedule}, {@code schedules} (with pause and resume) and {@code unschedule}. */
class ScheduleCommandsTest {

  private static final ObjectMapper JSON = new ObjectMapper();
  private static TestDatabase db;
  private static Db sql;

  @BeforeAll
  static void database() {
    db = TestDatabase.create("schedule_commands");
    sql = new Db(db);
  }

  @AfterAll
  static void drop() {
    db.close();
  }

  @BeforeEach
  void noSchedules() throws Exception {
    sql.exec("DELETE FROM pgtask.schedule");
  }

  private static CliRun cli(String... args) {
    List<String> all = new ArrayList<>(List.of(args));
    all.add("--url");
    all.add(db.fullUrl());
    return CliRun.of(all.toArray(String[]::new));
  }

  @Test
  void scheduleDeclaresWithEveryOptionAndPrintsTheNextFireTime() throws Exception {
    CliRun run = cli("schedule", "nightly", "0 30 2 * * *", "report.build", "--payload", "{\"period\": \"day\"}",
        "--queue", "reports", "--tenant", "acme", "--zone", "Europe/Berlin", "--catch-up", "2", "--allow-overlap",
        "--jitter", "30s", "--priority", "3", "--max-attempts", "4");
    assertThat(run.exitCode()).as("stderr: %s", run.err()).isEqualTo(ExitCodes.OK);
    assertThat(run.out()).startsWith("schedule nightly declared; next fire at ");
    assertThat(sql.rows("SELECT concat_ws(' ', cron, kind, payload, queue, tenant, time_zone, catch_up, allow_overlap, "
        + "jitter, priority, max_attempts) FROM pgtask.schedules")).containsExactly(
        "0 30 2 * * * report.build {\"period\": \"day\"} reports acme Europe/Berlin 2 t 00:00:30 3 4");
    assertThat(sql.text("SELECT (next_fire_at AT TIME ZONE 'Europe/Berlin')::time FROM pgtask.schedules")).isEqualTo("02:30:00");

    CliRun again = cli("schedule", "nightly", "0 30 2 * * *", "report.build", "--json");
    assertThat(JSON.readTree(again.out()).get("name").asText()).isEqualTo("nightly");
    assertThat(sql.count("SELECT count(*) FROM pgtask.schedule")).isEqualTo(1);
  }

  @Test
  void anInvalidDeclarationIsOneLineExitTwoAndStoresNothing() throws Exception {
    String[][] bad = {
        {"schedule", "s", "61 * * * *", "k"},
        {"schedule", "s", "* * * *", "k"},
        {"schedule", "s", "* * * * *", "k", "--zone", "Mars/Olympus"},
        {"schedule", "s", "* * * * *", "k", "--queue", "no spaces"},
        {"schedule", "s", "* * * * *", "k", "--payload", "[1]"},
        {"schedule", "s", "* * * * *", "k", "--catch-up", "-1"},
    };
    for (String[] args : bad) {
      CliRun run = cli(args);
      assertThat(run.exitCode()).as("exit code of %s; stderr %s", String.join(" ", args), run.err()).isEqualTo(ExitCodes.USAGE);
      assertThat(run.errLines()).as("stderr of %s", String.join(" ", args)).hasSize(1);
      assertThat(run.err()).contains("invalid schedule");
    }
    assertThat(sql.count("SELECT count(*) FROM pgtask.schedule")).isZero();
  }

  @Test
  void schedulesListsPausesResumesAndUnscheduleRemoves() throws Exception {
    assertThat(cli("schedules").out()).isEqualTo("no schedules\n");
    assertThat(cli("schedule", "a", "@hourly", "k").exitCode()).isZero();
    assertThat(cli("schedule", "b", "*/10 * * * * *", "k", "--queue", "q").exitCode()).isZero();
    CliRun table = cli("schedules");
    assertThat(table.out().lines().findFirst().orElseThrow()).startsWith("NAME").contains("NEXT_FIRE_AT", "LAST_STATE");
    assertThat(table.out().lines().skip(1).map(l -> l.split("\\s+")[0])).containsExactly("a", "b");

    CliRun pause = cli("schedules", "pause", "a");
    assertThat(pause.exitCode()).as(pause.err()).isZero();
    assertThat(pause.out()).isEqualTo("schedule a paused\n");
    JsonNode rows = JSON.readTree(cli("schedules", "--json").out());
    assertThat(rows).hasSize(2);
    assertThat(rows.get(0).get("name").asText()).isEqualTo("a");
    assertThat(rows.get(0).get("paused").asBoolean()).isTrue();
    assertThat(rows.get(1).get("paused").asBoolean()).isFalse();
    assertThat(cli("schedules", "resume", "a").out()).isEqualTo("schedule a resumed\n");
    assertThat(sql.text("SELECT paused FROM pgtask.schedules WHERE name = 'a'")).isEqualTo("f");

    assertThat(cli("unschedule", "a").out()).isEqualTo("schedule a removed\n");
    for (String[] args : new String[][] {{"unschedule", "a"}, {"schedules", "pause", "a"}, {"schedules", "resume", "a"}}) {
      CliRun run = cli(args);
      assertThat(run.exitCode()).as(String.join(" ", args)).isEqualTo(ExitCodes.NOT_FOUND);
      assertThat(run.err()).contains("no schedule named 'a'");
    }
  }
}
