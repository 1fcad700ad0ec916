package dev.pgtask.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** The command line built for one subcommand behaves as the full one: same output, errors and exit codes. */
class MainTest {

  @Test
  void aCommandLineBuiltForOneSubcommandPrintsAndExitsAsTheFullOne() {
    List<String[]> cases = List.of(
        new String[] {"status", "--help"},
        new String[] {"status", "--bogus"},
        new String[] {"locks", "extra"},
        new String[] {"locks", "workers"},
        new String[] {"tasks", "--limit", "0"},
        new String[] {"tasks", "--state", "done"},
        new String[] {"tasks", "--limit"},
        new String[] {"workers", "--json", "--json"},
        new String[] {"enqueue"},
        new String[] {"cancel", "not-a-number"},
        new String[] {"worker", "--help"},
        new String[] {"migrate", "--help"});
    for (String[] args : cases) {
      Result full = run(Main.commandLine(), args);
      Result one = run(Main.commandLine(args), args);
      assertThat(one).as("pgtask %s", String.join(" ", args)).isEqualTo(full);
      assertThat(full.out + full.err).as("pgtask %s printed something", String.join(" ", args)).isNotEmpty();
    }
  }

  @Test
  void onlyTheNamedSubcommandIsBuilt() {
    assertThat(Main.commandLine("status", "--json").getSubcommands()).containsOnlyKeys("status", "help");
    assertThat(Main.commandLine("cancel", "1").getSubcommands()).containsOnlyKeys("cancel", "help");
    // anything else (an option first, no arguments, an unknown name, help) gets every subcommand
    for (String[] args : List.of(new String[] {}, new String[] {"--verbose", "status"}, new String[] {"stauts"},
        new String[] {"help", "status"})) {
      assertThat(Main.commandLine(args).getSubcommands()).as(String.join(" ", args))
          .containsKeys("status", "locks", "workers", "tasks", "worker", "demo", "help");
    }
  }

  private record Result(int code, String out, String err) {}

  private static Result run(CommandLine cmd, String[] args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    cmd.setOut(new PrintWriter(out, true));
    cmd.setErr(new PrintWriter(err, true));
    int code = cmd.execute(args);
    return new Result(code, out.toString(), err.toString());
  }

  @Test
  void theHelpsExitCodeParagraphHasOneWholeLinePerCodeWithinEightyColumns() {
    CliRun help = CliRun.of("--help");
    assertThat(help.exitCode()).isZero();
    List<String> lines = help.out().lines().toList();
    assertThat(lines).as("lines of pgtask --help longer than 80 columns").allMatch(l -> l.length() <= 80);
    int at = lines.indexOf("Exit codes:");
    assertThat(at).as("the exit codes heading in:%n%s", help.out()).isNotNegative();
    assertThat(lines.subList(at + 1, at + 8)).containsExactly(
        "  0  ok",
        "  1  failed ('pgtask demo': an invariant failed)",
        "  2  usage error or invalid input, such as an invalid schedule (nothing stored)",
        "  3  cannot connect to the database",
        "  4  no such task, or no such schedule",
        "  5  the task is running (or another transaction holds it)",
        "  6  the task's state does not allow the operation");
  }
}
