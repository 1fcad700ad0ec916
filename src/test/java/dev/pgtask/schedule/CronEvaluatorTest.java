package dev.pgtask.schedule;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.cronutils.model.CronType;
import com.cronutils.model.definition.CronDefinitionBuilder;
import com.cronutils.model.time.ExecutionTime;
import com.cronutils.parser.CronParser;
import dev.pgtask.InvalidScheduleException;
import dev.pgtask.PgTask;
import dev.pgtask.Schedule;
import dev.pgtask.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The database's cron evaluator (pgtask.cron_parse, pgtask.cron_next): the one parser of cron
 * expressions (for SQL and Java declarations alike) and the one that decides fire times. Its fire
 * times are held to cron-utils, an independent evaluator used here as a test oracle only, where no
 * DST change intervenes; and to pgtask's own DST rules where cron-utils differs.
 */
class CronEvaluatorTest {

  static TestDatabase db;
  static Connection c;

  @BeforeAll
  static void setUp() throws SQLException {
    db = TestDatabase.create("cron_eval");
    c = db.connect();
  }

  @AfterAll
  static void tearDown() throws SQLException {
    c.close();
    db.close();
  }

  /** The next n fire times by pgtask.cron_next (the firing pass's function). */
  static List<Instant> sqlFires(String cron, String zone, Instant after, int n) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT pgtask.cron_next(pgtask.cron_parse(?), ?, ?)")) {
      List<Instant> out = new ArrayList<>();
      Instant t = after;
      for (int i = 0; i < n; i++) {
        ps.setString(1, cron);
        ps.setTimestamp(2, Timestamp.from(t));
        ps.setString(3, zone);
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          if (rs.getTimestamp(1) == null) {
            break;
          }
          t = rs.getTimestamp(1).toInstant();
          out.add(t);
        }
      }
      return out;
    }
  }

  static String sqlError(String cron) {
    try (PreparedStatement ps = c.prepareStatement("SELECT pgtask.cron_parse(?)")) {
      ps.setString(1, cron);
      ps.executeQuery().close();
      return null;
    } catch (SQLException e) {
      assertThat(e.getSQLState()).as("SQLSTATE for %s", cron).isEqualTo("23514");
      return e.getMessage();
    }
  }

  /** A Java declaration of {@code cron} ({@link PgTask#schedule}): null when accepted, else its message. */
  static String javaError(String cron) {
    try {
      PgTask.create(db.dataSource()).schedule(Schedule.of("cron-check", cron, "k"));
      return null;
    } catch (InvalidScheduleException e) {
      assertThat(e.constraint()).as("constraint for %s", cron).isEqualTo("schedule_cron");
      return e.getMessage();
    }
  }

  /** The macros' six-field form, as pgtask.cron_macro has them (for the oracle). */
  static final Map<String, String> MACROS = Map.of("@yearly", "0 0 0 1 1 *", "@annually", "0 0 0 1 1 *",
      "@monthly", "0 0 0 1 * *", "@weekly", "0 0 0 * * 0", "@daily", "0 0 0 * * *", "@midnight", "0 0 0 * * *",
      "@hourly", "0 0 * * * *");

  static final CronParser UNIX = new CronParser(CronDefinitionBuilder.instanceDefinitionFor(CronType.UNIX));
  static final CronParser SPRING = new CronParser(CronDefinitionBuilder.instanceDefinitionFor(CronType.SPRING53));

  static List<Instant> cronUtilsFires(String cron, ZoneId zone, Instant after, int n) {
    String fields = cron.startsWith("@") ? MACROS.get(cron) : cron;
    ExecutionTime et = ExecutionTime.forCron((fields.split(" ").length == 5 ? UNIX : SPRING).parse(fields));
    List<Instant> out = new ArrayList<>();
    ZonedDateTime t = after.atZone(zone);
    for (int i = 0; i < n; i++) {
      var next = et.nextExecution(t);
      if (next.isEmpty()) {
        break;
      }
      t = next.get();
      out.add(t.toInstant());
    }
    return out;
  }

  static final List<String> VALID = List.of(
      "* * * * *", "*/5 * * * *", "0 * * * *", "30 2 * * *", "0 9-17 * * MON-FRI", "15,45 */3 * * *",
      "0 0 1 * *", "0 0 1 1 *", "0 12 * * 0", "0 12 * * 7", "0 0 13 * 5", "5-50/15 1-23/4 * * *",
      "0 0 * JAN,JUL *", "0 0 L-0 * *".replace("L-0 ", "1 "), "59 23 31 12 *", "0 0 29 2 *", "0 6 * * sun",
      "*/10 * * * * *", "0 30 2 * * *", "0 0 * * * *", "0 */15 9-17 * * MON-FRI", "15 0 0 13 * FRI",
      "0 0 0 13 * ?", "0 0 0 ? * 1", "1,2,3 * * * * *", "0 0 12 1/5 * *", "0 0 0 1 */3 *", "30 */7 * * * *",
      "0 0 0 * * 7", "@hourly", "@daily", "@weekly", "@monthly", "@yearly", "@annually", "@midnight",
      "0 0 10-12/2 * * *");

  static final List<String> INVALID = List.of(
      "", "* * * *", "* * * * * * *", "60 * * * *", "* 24 * * *", "* * 32 * *", "* * 0 * *", "* * * 13 *",
      "* * * 0 *", "* * * * 8", "61 * * * * *", "5-2 * * * *", "*/0 * * * *", "x * * * *", "1,,2 * * * *",
      "0 0 L * *", "0 0 15W * *", "0 0 * * 5#3", "0 0 * * 5L", "@reboot", "@every", "0 0 * FOO *",
      "* * * * * 8", "0 0 0 * * * 2026");

  @Test
  void aJavaDeclarationIsCheckedByTheDatabasesParserAndCarriesItsMessage() throws SQLException {
    for (String cron : VALID) {
      assertThat(sqlError(cron)).as("the database on valid %s", cron).isNull();
      assertThat(javaError(cron)).as("a Java declaration of valid %s", cron).isNull();
    }
    for (String cron : INVALID) {
      String sql = sqlError(cron);
      assertThat(sql).as("the database on invalid '%s'", cron).isNotNull().contains("pgtask: invalid schedule");
      assertThat(sql).as("the driver's message of '%s'", cron).contains(javaError(cron));
    }
    try (PreparedStatement ps = c.prepareStatement("SELECT cron FROM pgtask.schedule WHERE name = 'cron-check'");
        ResultSet rs = ps.executeQuery()) {
      assertThat(rs.next()).isTrue();
      assertThat(rs.getString(1)).as("an invalid declaration stores nothing: the last valid one stays")
          .isEqualTo(VALID.get(VALID.size() - 1));
    }
  }

  @Test
  void theDatabaseAndCronUtilsAgreeOnFireTimesAwayFromDstChanges() throws SQLException {
    Random random = new Random(42);
    List<String> zones = List.of("UTC", "Asia/Kolkata", "America/Sao_Paulo", "Europe/Berlin");
    int compared = 0;
    for (String cron : VALID) {
      for (String zone : zones) {
        for (int i = 0; i < 6; i++) {
          // instants from 2024 to 2030, at arbitrary seconds
          Instant after = Instant.parse("2024-01-01T00:00:00Z").plusSeconds((long) (random.nextDouble() * 6 * 365 * 86400));
          List<Instant> sql = sqlFires(cron, zone, after, 5);
          List<Instant> utils = cronUtilsFires(cron, ZoneId.of(zone), after, 5);
          ZoneId z = ZoneId.of(zone);
          boolean dstInBetween = utils.isEmpty() || sql.isEmpty()
              || !z.getRules().getOffset(after).equals(z.getRules().getOffset(utils.get(utils.size() - 1)))
              || !z.getRules().getOffset(after).equals(z.getRules().getOffset(sql.get(sql.size() - 1)));
          if (dstInBetween) {
            continue; // pgtask's DST rules apply there (below): not cron-utils'
          }
          assertThat(sql).as("fire times of %s in %s after %s", cron, zone, after).isEqualTo(utils);
          compared++;
        }
      }
    }
    assertThat(compared).as("comparisons made").isGreaterThan(VALID.size() * 12);
  }

  @Test
  void aLocalTimeSkippedByDstFiresOnceShiftedByTheGap() throws SQLException {
    // Europe/Berlin, 2026-03-29: 02:00 CET becomes 03:00 CEST, 02:30 does not exist that night
    List<Instant> fires = sqlFires("0 30 2 * * *", "Europe/Berlin", Instant.parse("2026-03-27T12:00:00Z"), 3);
    assertThat(fires).containsExactly(
        Instant.parse("2026-03-28T01:30:00Z"),   // 02:30 CET
        Instant.parse("2026-03-29T01:30:00Z"),   // the skipped 02:30, fired once at 03:30 CEST
        Instant.parse("2026-03-30T00:30:00Z"));  // 02:30 CEST
    // cron-utils would not fire at all that day: the reason the database's evaluator decides
    assertThat(cronUtilsFires("0 30 2 * * *", ZoneId.of("Europe/Berlin"), Instant.parse("2026-03-28T12:00:00Z"), 1))
        .containsExactly(Instant.parse("2026-03-30T00:30:00Z"));
    // every 15 minutes through the gap: every instant once, none twice
    assertThat(sqlFires("*/15 * * * *", "Europe/Berlin", Instant.parse("2026-03-29T00:40:00Z"), 3)).containsExactly(
        Instant.parse("2026-03-29T00:45:00Z"), Instant.parse("2026-03-29T01:00:00Z"), Instant.parse("2026-03-29T01:15:00Z"));
  }

  @Test
  void aLocalTimeRepeatedByDstFiresOnceAtItsFirstOccurrence() throws SQLException {
    // Europe/Berlin, 2026-10-25: 03:00 CEST becomes 02:00 CET, 02:00-02:59 happens twice
    List<Instant> fires = sqlFires("30 2 * * *", "Europe/Berlin", Instant.parse("2026-10-24T12:00:00Z"), 2);
    assertThat(fires).containsExactly(
        Instant.parse("2026-10-25T00:30:00Z"),   // 02:30 CEST, the first 02:30; not 01:30Z (02:30 CET) too
        Instant.parse("2026-10-26T01:30:00Z"));
    // hourly: 02:00 fires once (CEST); the second 02:00 (CET) does not fire again
    assertThat(sqlFires("@hourly", "Europe/Berlin", Instant.parse("2026-10-24T23:30:00Z"), 3)).containsExactly(
        Instant.parse("2026-10-25T00:00:00Z"), Instant.parse("2026-10-25T02:00:00Z"), Instant.parse("2026-10-25T03:00:00Z"));
    // cron-utils fires the repeated 02:00 twice: the reason the database's evaluator decides
    assertThat(cronUtilsFires("@hourly", ZoneId.of("Europe/Berlin"), Instant.parse("2026-10-24T23:30:00Z"), 2))
        .containsExactly(Instant.parse("2026-10-25T00:00:00Z"), Instant.parse("2026-10-25T01:00:00Z"));
  }

  @Test
  void fiveFieldDayFieldsCombineWithOrSixFieldWithAnd() throws SQLException {
    // Unix: the 13th or any Friday; Spring: Friday the 13th
    assertThat(sqlFires("0 0 13 * 5", "UTC", Instant.parse("2026-04-01T00:00:00Z"), 3)).containsExactly(
        Instant.parse("2026-04-03T00:00:00Z"), Instant.parse("2026-04-10T00:00:00Z"), Instant.parse("2026-04-13T00:00:00Z"));
    assertThat(sqlFires("0 0 0 13 * FRI", "UTC", Instant.parse("2026-04-01T00:00:00Z"), 1))
        .containsExactly(Instant.parse("2026-11-13T00:00:00Z"));
  }

  @Test
  void anExpressionThatNeverFiresIsRefusedAtDeclaration() {
    assertThatThrownBy(() -> {
      try (PreparedStatement ps = c.prepareStatement("SELECT pgtask.schedule('never', '0 0 30 2 *', 'k')")) {
        ps.executeQuery().close();
      }
    }).isInstanceOf(SQLException.class).hasMessageContaining("never fires");
  }
}
