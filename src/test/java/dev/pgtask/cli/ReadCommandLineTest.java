package dev.pgtask.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pgtask.testsupport.TestDatabase;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The read commands' parser without picocli ({@link ReadCommandLine}) runs a command with plain
 * options exactly as picocli runs it (same stdout, stderr and exit code, failures included), and
 * leaves every other command line to picocli.
 */
class ReadCommandLineTest {

  private static TestDatabase db;
  private static TestDatabase empty;

  @BeforeAll
  static void fixture() throws Exception {
    db = TestDatabase.create("read_cli");
    empty = TestDatabase.create("read_cli_empty", false);
    try (var c = db.connect(); var st = c.createStatement()) {
      // due in 2030: nothing in the output moves while the test compares two runs
      st.execute("SELECT pgtask.enqueue('report.build', '{\"n\": 1}', 'reports', 'acme', '2030-01-01T00:00:00Z')");
      st.execute("SELECT pgtask.enqueue('report.build', '{\"n\": 2}', 'reports', 'zeta', '2030-01-02T00:00:00Z')");
      st.execute("SELECT pgtask.enqueue('mail.send', '{}', 'default', NULL, '2030-01-03T00:00:00Z')");
    }
  }

  @AfterAll
  static void drop() {
    db.close();
    empty.close();
  }

  @Test
  void aReadCommandWithPlainOptionsPrintsAndExitsAsUnderPicocli() {
    String url = db.fullUrl();
    List<String[]> cases = new ArrayList<>();
    for (String command : List.of("status", "locks", "workers", "tasks")) {
      cases.add(new String[] {command, "--url", url});
      cases.add(new String[] {command, "--json", "--url=" + url});
      cases.add(new String[] {command, "--url", url, "--verbose", "--json"});
      cases.add(new String[] {command, "--url", "jdbc:postgresql://127.0.0.1:1/nowhere?user=x"});
      cases.add(new String[] {command, "--url", empty.fullUrl()});
    }
    cases.add(new String[] {"tasks", "--url", url, "--state", "scheduled", "--queue", "reports", "--kind",
        "report.build", "--limit", "1"});
    cases.add(new String[] {"tasks", "--limit=10000", "--state= SCHEDULED", "--queue=none", "--url", url});
    cases.add(new String[] {"tasks", "--kind", "mail.send", "--json", "--url", url});
    cases.add(new String[] {"show", "1", "--url", url});
    cases.add(new String[] {"show", "--json", "--url=" + url, "2"});
    cases.add(new String[] {"show", "987654321", "--url", url});
    cases.add(new String[] {"show", "1", "--url", empty.fullUrl()});
    for (String[] args : cases) {
      String line = String.join(" ", args);
      // status shows the server's oldest open transaction, which other clients of the server open
      // and close: that one value is masked, and the two runs are compared until a pair saw the
      // same rates (a real difference never passes)
      await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(200)).untilAsserted(() -> {
        CliRun picocli = steady(CliRun.of(args));
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        Integer code = ReadCommandLine.run(args, new PrintWriter(out, true), new PrintWriter(err, true));
        assertThat(code).as("pgtask %s ran without picocli", line).isNotNull();
        assertThat(steady(new CliRun(code, out.toString(), err.toString()))).as("pgtask %s", line).isEqualTo(picocli);
      });
    }
    assertThat(CliRun.of("tasks", "--url", url).out()).contains("report.build", "acme", "zeta", "mail.send");
    assertThat(CliRun.of("status", "--url", "jdbc:postgresql://127.0.0.1:1/nowhere?user=x").exitCode())
        .isEqualTo(ExitCodes.CANNOT_CONNECT);
    assertThat(CliRun.of("locks", "--url", empty.fullUrl()).err()).contains("run 'pgtask migrate' first");
  }

  /** The run with the server's oldest open transaction (another client's) masked. */
  private static CliRun steady(CliRun run) {
    String out = run.out().replaceAll("(\"oldest_xact_[a-z]+\" : )[^,\\n]+", "$1_")
        .replaceAll("(oldest transaction  ).*", "$1_");
    return new CliRun(run.exitCode(), out, run.err());
  }

  @Test
  void everyOtherCommandLineIsLeftToPicocli() {
    String url = db.fullUrl();
    List<String[]> cases = List.of(
        new String[] {}, new String[] {"--verbose", "status"}, new String[] {"stauts"}, new String[] {"help", "status"},
        new String[] {"enqueue", "--kind", "x"}, new String[] {"migrate"},
        new String[] {"status", "--help"}, new String[] {"status", "-h"}, new String[] {"tasks", "-V"},
        new String[] {"status", "--bogus"}, new String[] {"locks", "extra"}, new String[] {"locks", "workers"},
        new String[] {"status", "--url"}, new String[] {"status", "--url", "--json"},
        new String[] {"status", "--url", url, "--url", url}, new String[] {"workers", "--json", "--json"},
        new String[] {"status", "--json=true", "--url", url}, new String[] {"status", "@args.txt"},
        new String[] {"status", "--url", "@" + url}, new String[] {"status", "--", "--url", url},
        new String[] {"tasks", "--limit", "0"}, new String[] {"tasks", "--limit", "10001"},
        new String[] {"tasks", "--limit", "050"}, new String[] {"tasks", "--limit", "+5"},
        new String[] {"tasks", "--limit"}, new String[] {"tasks", "--state", "done"},
        new String[] {"tasks", "--state="}, new String[] {"status", "--state", "running"},
        new String[] {"tasks", "--queue", "a", "--queue", "b"}, new String[] {"show"}, new String[] {"show", "01"},
        new String[] {"show", "1", "2"}, new String[] {"show", "-1"}, new String[] {"show", "x", "--url", url},
        new String[] {"show", "1", "--state", "running"});
    for (String[] args : cases) {
      Integer code = ReadCommandLine.run(args, new PrintWriter(new StringWriter()), new PrintWriter(new StringWriter()));
      assertThat(code).as("pgtask %s", String.join(" ", args)).isNull();
    }
  }
}
