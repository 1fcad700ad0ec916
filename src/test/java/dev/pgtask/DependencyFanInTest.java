package dev.pgtask;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.QueueDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Fan-in: one child of N parents costs each parent's completion O(1), not a scan of its siblings.
 * Measured: the median time of one parent's completing statement (with the trigger that resolves
 * the child) for a child of 10 parents and of 1,000; the child is released by the last one.
 */
class DependencyFanInTest {

  @RegisterExtension
  static final QueueDatabase queue = new QueueDatabase("dependency_fan_in", 4);

  @Test
  void eachOfAThousandParentsCompletesInAboutTheTimeOneOfTenDoes() throws Exception {
    measure(200); // warm-up: plans, caches
    double ten = measure(10);
    double thousand = measure(1000);
    System.out.printf("fan-in: median time of one parent's completion: %.3f ms with 10 parents, %.3f ms with 1000%n",
        ten, thousand);
    assertThat(thousand).as("median ms per parent completion with 1000 parents (10 parents: %.3f ms)", ten)
        .isLessThan(3 * ten + 1.0);
  }

  /** Enqueues N parents and their child, completes the parents one by one; returns the median ms. */
  private static double measure(int n) throws Exception {
    Db sql = queue.sql();
    sql.exec("DELETE FROM pgtask.task");
    List<Double> times = new ArrayList<>();
    try (Connection c = queue.database().connect()) {
      List<Long> parents = new ArrayList<>();
      try (Statement s = c.createStatement();
           ResultSet rs = s.executeQuery("SELECT id FROM pgtask.enqueue_batch(array_fill('fan.parent'::text, ARRAY[" + n + "]))")) {
        while (rs.next()) {
          parents.add(rs.getLong(1));
        }
      }
      long child;
      try (PreparedStatement ps = c.prepareStatement("SELECT pgtask.enqueue('fan.child', depends_on => ?)")) {
        ps.setArray(1, c.createArrayOf("int8", parents.toArray()));
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          child = rs.getLong(1);
        }
      }
      try (PreparedStatement ps = c.prepareStatement(
          "UPDATE pgtask.task SET state = 'completed', finished_at = clock_timestamp() WHERE id = ?")) {
        for (int i = 0; i < n; i++) {
          assertThat(sql.text("SELECT state FROM pgtask.tasks WHERE id = " + child)).as("child before parent %d of %d", i + 1, n)
              .isEqualTo("pending");
          ps.setLong(1, parents.get(i));
          long start = System.nanoTime();
          ps.executeUpdate();
          times.add((System.nanoTime() - start) / 1e6);
        }
      }
      assertThat(sql.text("SELECT state FROM pgtask.tasks WHERE id = " + child)).as("child after its last parent")
          .isEqualTo("available");
    }
    return Db.quantile(times, 0.5);
  }
}
