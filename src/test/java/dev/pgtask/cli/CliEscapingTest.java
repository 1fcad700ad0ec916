package dev.pgtask.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.TestDatabase;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Whatever a producer puts in a task's kind, tenant or error, the CLI never prints a raw control
 * character: every command that shows them escapes C0 (ESC included), DEL, C1 and the
 * bidirectional controls, in plain text and in JSON (docs/operations.md).
 */
class CliEscapingTest {

  /** Clears the screen, sets the window title, an 8-bit CSI, DEL, a right-to-left override, a line break. */
  static final String EVIL = "\u001b[2J\u001b]0;owned\u0007\u009b31m\u007f\u202e\u2066x\u0001y\ttab\nline";

  private static TestDatabase db;
  private static Db sql;
  private static long id;

  @BeforeAll
  static void database() throws Exception {
    db = TestDatabase.create("cli_escaping");
    sql = new Db(db);
    String kind = "kind" + EVIL;
    String tenant = "tenant" + EVIL;
    id = sql.count("SELECT pgtask.enqueue(kind => " + literal(kind) + ", tenant => " + literal(tenant) + ")");
    // a task of another tenant, due (no worker serves its queue); the first failed with an evil error, retrying later
    sql.count("SELECT pgtask.enqueue(kind => " + literal(kind) + ", tenant => " + literal("other" + tenant) + ")");
    sql.exec("UPDATE pgtask.task SET state = 'retryable', attempt = 1, run_at = now() + interval '1 hour', "
        + "errors = jsonb_build_array(jsonb_build_object("
        + "'attempt', 1, 'at', now(), 'error', " + literal("boom" + EVIL) + ", 'worker', " + literal("w" + EVIL)
        + ")) WHERE id = " + id);
  }

  @AfterAll
  static void drop() {
    db.close();
  }

  private static String literal(String s) {
    // E'' with every character as a Unicode escape: the SQL text itself stays plain
    StringBuilder b = new StringBuilder("U&'");
    for (char c : s.toCharArray()) {
      b.append(String.format("\\%04X", (int) c));
    }
    return b.append("'").toString();
  }

  private static CliRun cli(String... args) {
    List<String> all = new ArrayList<>(List.of(args));
    all.add("--url");
    all.add(db.fullUrl());
    return CliRun.of(all.toArray(String[]::new));
  }

  /** The characters a value may not bring to the terminal; the command's own line breaks excepted. */
  private static void assertNoRawControl(String what, String text) {
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c != '\n') {
        assertThat(TerminalText.isUnsafe(c)).as("%s prints U+%04X raw at %d:%n%s", what, (int) c, i, text).isFalse();
      }
    }
  }

  @Test
  void tasksShowsAnEvilKindTenantAndErrorEscapedInTextAndJson() {
    CliRun text = cli("tasks");
    assertThat(text.exitCode()).as("exit code; stderr: %s", text.err()).isZero();
    assertNoRawControl("pgtask tasks", text.out());
    assertThat(text.out()).as("the kind, escaped").contains("kind\\u001B[2J\\u001B]0;owned\\u0007\\u009B31m\\u007F\\u202E\\u2066x\\u0001y");
    assertThat(text.out()).as("the error, escaped").contains("boom\\u001B[2J");
    CliRun json = cli("tasks", "--json");
    assertThat(json.exitCode()).as("exit code of --json; stderr: %s", json.err()).isZero();
    assertNoRawControl("pgtask tasks --json", json.out());
    assertThat(json.out()).as("the kind in JSON").contains("kind\\u001B[2J").contains("\\u009B31m").contains("\\u202E");
  }

  @Test
  void statusShowsAnEvilKindEscaped() {
    // no worker serves the queue: the kind shows among what no live worker can run
    CliRun text = cli("status");
    assertThat(text.exitCode()).as("exit code; stderr: %s", text.err()).isZero();
    assertThat(text.out()).as("status lists the unrunnable kind").contains("kind\\u001B[2J");
    assertNoRawControl("pgtask status", text.out());
    CliRun json = cli("status", "--json");
    assertNoRawControl("pgtask status --json", json.out());
  }

  @Test
  void explainShowsAnEvilErrorEscaped() {
    CliRun text = cli("explain", Long.toString(id));
    assertThat(text.exitCode()).as("exit code; stderr: %s", text.err()).isZero();
    assertThat(text.out()).as("the explanation quotes the error").contains("boom\\u001B[2J");
    assertNoRawControl("pgtask explain", text.out());
    CliRun json = cli("explain", Long.toString(id), "--json");
    assertNoRawControl("pgtask explain --json", json.out());
  }

  @Test
  void anErrorMessageCarryingAValueIsEscaped() {
    CliRun run = cli("tasks", "--kind", "x", "--limit", "0" + EVIL);
    assertNoRawControl("a usage error", run.err());
  }

  @Test
  void statusAnswersWhenAStoredTaskHasAnInfiniteRunAt() throws Exception {
    sql.exec("INSERT INTO pgtask.task (kind, queue, run_at) VALUES ('hand.made', 'infinite_q', '-infinity'), "
        + "('hand.made', 'infinite_q', 'infinity')");
    try {
      CliRun text = cli("status");
      assertThat(text.exitCode()).as("status exit code; stderr: %s", text.err()).isZero();
      assertThat(text.out()).as("status shows the queue").contains("infinite_q");
      CliRun tasks = cli("tasks", "--queue", "infinite_q");
      assertThat(tasks.exitCode()).as("tasks exit code; stderr: %s", tasks.err()).isZero();
    } finally {
      sql.exec("DELETE FROM pgtask.task WHERE queue = 'infinite_q'");
    }
  }
}
