package dev.pgtask.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class TextTableTest {

  @Test
  void alignsTextLeftAndNumbersRightWithTwoSpacesBetweenColumns() {
    String table = new TextTable("QUEUE", "AVAILABLE", "LAG")
        .row("default", 3, "1.2s")
        .row("mail", 12045, "0s")
        .render();
    assertThat(table).isEqualTo(
        "QUEUE    AVAILABLE  LAG\n"
            + "default          3  1.2s\n"
            + "mail         12045  0s\n");
  }

  @Test
  void nullCellsAreEmptyAndNoLineEndsInSpaces() {
    String table = new TextTable("TENANT", "WAITING_PIDS", "ID").row("acme", null, 7).row(null, "12,13", 8).render();
    assertThat(table.lines()).allSatisfy(l -> assertThat(l).doesNotEndWith(" "));
    assertThat(table.lines()).containsExactly(
        "TENANT  WAITING_PIDS  ID",
        "acme                   7",
        "        12,13          8");
  }

  @Test
  void aColumnWithAnyTextIsLeftAlignedAndLineBreaksInCellsBecomeSpaces() {
    String table = new TextTable("ATTEMPT", "LAST_ERROR").row("1/25", "boom\nat line 2").row("10", null).render();
    assertThat(table.lines()).containsExactly(
        "ATTEMPT  LAST_ERROR",
        "1/25     boom at line 2",
        "10");
  }

  @Test
  void anEmptyTableIsItsHeaderLine() {
    TextTable t = new TextTable("A", "B");
    assertThat(t.isEmpty()).isTrue();
    assertThat(t.render()).isEqualTo("A  B\n");
  }

  @Test
  void aRowWithTheWrongNumberOfCellsIsRejected() {
    assertThatThrownBy(() -> new TextTable("A", "B").row("only one"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("1 cells, the table 2 columns");
  }

  @Test
  void durationsAreCompact() {
    assertThat(Formats.duration(Duration.ZERO)).isEqualTo("0s");
    assertThat(Formats.duration(Duration.ofMillis(850))).isEqualTo("850ms");
    assertThat(Formats.duration(Duration.ofMillis(12_340))).isEqualTo("12.3s");
    assertThat(Formats.duration(Duration.ofSeconds(245))).isEqualTo("4m05s");
    assertThat(Formats.duration(Duration.ofMinutes(123))).isEqualTo("2h03m");
    assertThat(Formats.duration(Duration.ofHours(76))).isEqualTo("3d04h");
    assertThat(Formats.bytes(512L)).isEqualTo("512 B");
    assertThat(Formats.bytes(1_258_291L)).isEqualTo("1.2 MB");
  }

  @Test
  void controlCharactersInACellPrintEscapedNeverRaw() {
    String table = new TextTable("KIND").row("a\u001b[2Jb\u009b1m\u007f\u202e\u0007c\r\n\td").render();
    assertThat(table.lines()).containsExactly("KIND", "a\\u001B[2Jb\\u009B1m\\u007F\\u202E\\u0007c d");
  }
}
