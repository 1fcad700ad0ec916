package dev.pgtask.ops;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgtask.BulkResult;
import dev.pgtask.TaskFilter;
import dev.pgtask.testsupport.QueueDatabase;
import java.time.Instant;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The time range of a task filter (docs/operations.md, "Every task a filter matches"; docs/dashboard.md):
 * {@code from} (inclusive) and {@code until} (exclusive) on a task's last activity, when it finished,
 * else when its last attempt started, else when it was enqueued. The page of tasks
 * ({@code pgtask.task_page}), the bulk operations (dry run and action) and the error groups select
 * exactly the tasks inside it; a range whose start is not before its end is refused, by SQL with the
 * constraint {@code task_filter_range} and by Java with an {@link IllegalArgumentException}, and
 * changes nothing.
 */
class TaskTimeRangeTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("task_range", 4);

  static final Instant FROM = Instant.parse("2026-12-04T10:00:00Z");
  static final Instant UNTIL = Instant.parse("2026-12-04T11:00:00Z");

  /** Inside the range: its first instant, its last microsecond, and tasks whose last activity is a start or an enqueue. */
  static final List<String> INSIDE = List.of("range.at-from", "range.inside", "range.last-microsecond",
      "range.retryable-started-inside", "range.queued-inside");

  @BeforeEach
  void tasks() throws Exception {
    queue.sql().exec("DELETE FROM pgtask.task");
    failed("range.before-from", "discarded", null, "2026-12-04 09:59:59.999999+00");
    failed("range.at-from", "discarded", null, "2026-12-04 10:00:00+00");
    failed("range.inside", "discarded", null, "2026-12-04 10:30:00+00");
    failed("range.last-microsecond", "cancelled", null, "2026-12-04 10:59:59.999999+00");
    failed("range.at-until", "discarded", null, "2026-12-04 11:00:00+00");
    // its attempt started inside, but it finished after: its last activity is the finish
    failed("range.finished-after", "discarded", "2026-12-04 10:10:00+00", "2026-12-04 11:10:00+00");
    failed("range.retryable-started-inside", "retryable", "2026-12-04 10:20:00+00", null);
    queue.sql().exec("UPDATE pgtask.task SET created_at = '2026-12-04 10:40:00+00' WHERE id = "
        + queue.sql().text("SELECT pgtask.enqueue('range.queued-inside', '{}', 'parked')"));
  }

  /** A task that failed: its attempt started at {@code attemptedAt} (or not recorded), finished at {@code finishedAt}. */
  private static void failed(String kind, String state, String attemptedAt, String finishedAt) throws Exception {
    String id = queue.sql().text("SELECT pgtask.enqueue('" + kind + "', '{}', 'parked')");
    queue.sql().exec("UPDATE pgtask.task SET state = '" + state + "', attempt = 1, created_at = '2026-12-04 08:00:00+00', "
        + "attempted_at = " + (attemptedAt == null ? "NULL" : "'" + attemptedAt + "'") + ", finished_at = "
        + (finishedAt == null ? "NULL" : "'" + finishedAt + "'")
        + ", errors = '[{\"attempt\": 1, \"error\": \"java.io.IOException: timeout\"}]' WHERE id = " + id);
  }

  private static List<String> listed(TaskFilter filter) {
    return PgTaskOperations.create(queue.pool()).tasks(filter, null, 500).stream().map(TaskSummary::kind).sorted()
        .toList();
  }

  private static List<String> sorted(List<String> kinds) {
    return kinds.stream().sorted().toList();
  }

  private String states() throws Exception {
    return String.join(",", queue.sql().rows("SELECT kind || ' ' || state FROM pgtask.tasks ORDER BY kind"));
  }

  private static String counts(BulkResult r) {
    return r.states().stream().map(s -> s.state().sqlName() + " " + s.changed() + "/" + s.skipped())
        .collect(Collectors.joining(","));
  }

  @Test
  void theTaskListShowsExactlyTheTasksLastActiveFromInclusiveUntilExclusive() {
    assertThat(listed(TaskFilter.matching().withFrom(FROM).withUntil(UNTIL))).as("from and until")
        .isEqualTo(sorted(INSIDE));
    assertThat(listed(TaskFilter.matching().withFrom(FROM))).as("from alone").isEqualTo(sorted(List.of(
        "range.at-from", "range.inside", "range.last-microsecond", "range.retryable-started-inside",
        "range.queued-inside", "range.at-until", "range.finished-after")));
    assertThat(listed(TaskFilter.matching().withUntil(UNTIL))).as("until alone").isEqualTo(sorted(List.of(
        "range.before-from", "range.at-from", "range.inside", "range.last-microsecond",
        "range.retryable-started-inside", "range.queued-inside")));
    assertThat(listed(TaskFilter.matching().withFrom(FROM).withUntil(UNTIL).withKind("range.inside")))
        .as("with another filter").containsExactly("range.inside");
  }

  @Test
  void aBulkDryRunCountsAndTheActionChangesExactlyTheTasksInTheRange() throws Exception {
    TaskFilter range = TaskFilter.matching().withFrom(FROM).withUntil(UNTIL);
    String before = states();
    BulkResult dry = queue.pgtask().retryTasks(range, true);
    assertThat(counts(dry)).as("what a retry of the range would change, per state (changed/skipped)")
        .isEqualTo("available 0/1,cancelled 1/0,discarded 2/0,retryable 1/0");
    assertThat(states()).as("the tasks after the dry run").isEqualTo(before);

    BulkResult done = queue.pgtask().retryTasks(range, false);
    assertThat(counts(done)).as("what the retry changed").isEqualTo(counts(dry));
    assertThat(queue.sql().rows("SELECT kind FROM pgtask.task WHERE state = 'available' ORDER BY kind"))
        .as("the tasks available after the retry: the range's, and the queued one it skipped")
        .isEqualTo(sorted(INSIDE));
    assertThat(queue.sql().rows("SELECT kind || ' ' || state FROM pgtask.tasks WHERE state <> 'available' ORDER BY kind"))
        .as("the tasks outside the range, unchanged")
        .containsExactly("range.at-until discarded", "range.before-from discarded", "range.finished-after discarded");
  }

  @Test
  void theErrorGroupsCountOnlyTheTasksInTheRange() {
    List<ErrorGroup> groups = PgTaskOperations.create(queue.pool()).errorGroups(null, FROM, UNTIL, 100);
    assertThat(groups.stream().map(ErrorGroup::kind).sorted().toList()).as("groups of the failed tasks in the range")
        .containsExactly("range.at-from", "range.inside", "range.retryable-started-inside");
    assertThat(PgTaskOperations.create(queue.pool()).errorGroups(null, null, UNTIL, 100)).as("until alone")
        .extracting(ErrorGroup::kind).contains("range.before-from").doesNotContain("range.at-until");
  }

  @Test
  void aRangeWhoseStartIsNotBeforeItsEndIsRefusedByNameAndChangesNothing() throws Exception {
    String before = states();
    assertThatThrownBy(() -> TaskFilter.matching().withFrom(UNTIL).withUntil(FROM)).as("from after until")
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("from must be before");
    assertThatThrownBy(() -> TaskFilter.matching().withUntil(FROM).withFrom(FROM)).as("from equal to until")
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("from must be before");
    assertThatThrownBy(() -> PgTaskOperations.create(queue.pool()).errorGroups(null, UNTIL, FROM, 10))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("from must be before");
    String later = "'2026-12-04 11:00:00+00'";
    String earlier = "'2026-12-04 10:00:00+00'";
    for (String call : List.of(
        "SELECT * FROM pgtask.retry_tasks(active_from => " + later + ", active_until => " + earlier + ")",
        "SELECT * FROM pgtask.cancel_tasks(active_from => " + earlier + ", active_until => " + earlier + ")",
        "SELECT * FROM pgtask.delete_tasks(kind => 'range.inside', active_from => " + later + ", active_until => "
            + earlier + ", dry_run => true)",
        "SELECT * FROM pgtask.task_page(NULL, NULL, NULL, NULL, NULL, NULL, " + later + ", " + earlier + ", NULL, 10)",
        "SELECT * FROM pgtask.error_groups(NULL, " + later + ", " + earlier + ", 10)")) {
      assertThatThrownBy(() -> queue.sql().exec(call)).as(call)
          .isInstanceOfSatisfying(org.postgresql.util.PSQLException.class, e -> {
            assertThat(e.getSQLState()).isEqualTo("22023");
            assertThat(e.getServerErrorMessage().getConstraint()).isEqualTo("task_filter_range");
            assertThat(e.getMessage()).contains("active_from must be before active_until");
          });
    }
    assertThat(states()).as("the tasks after the refusals").isEqualTo(before);
  }

  @Test
  void aRangeAloneIsAFilterOfABulkOperation() throws Exception {
    assertThat(queue.pgtask().deleteTasks(TaskFilter.matching().withFrom(FROM), true).changed())
        .as("a dry run of a delete from 10:00").isEqualTo(7);
    assertThat(queue.sql().rows("SELECT * FROM pgtask.delete_tasks(active_until => '2026-12-04 10:00:00+00')"))
        .as("a delete until 10:00, from SQL").containsExactly("discarded\t1\t0");
  }
}
