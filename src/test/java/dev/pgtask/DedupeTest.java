package dev.pgtask;

import static dev.pgtask.SqlEnqueueTest.exec;
import static dev.pgtask.SqlEnqueueTest.queryLong;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pgtask.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.time.Duration;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Dedupe: while an unfinished task (scheduled, available, running, retryable) holds a dedupe key,
 * enqueueing that key returns the holder's id, also under concurrent enqueuers.
 */
class DedupeTest {

  private static final int ENQUEUERS = 8;
  private static final int ROUNDS = 5;
  /** Batches deadlocked within ~60 rounds before the fix that inserts keyed rows in key order. */
  private static final int BATCH_ROUNDS = Integer.getInteger("pgtask.dedupe.batchRounds", 30);

  private static TestDatabase db;
  private static PgTask pgtask;
  private static ExecutorService pool;

  @BeforeAll
  static void setUp() {
    db = TestDatabase.create("dedupe");
    pgtask = PgTask.create(db.dataSource());
    pool = Executors.newFixedThreadPool(ENQUEUERS);
  }

  @AfterAll
  static void tearDown() throws InterruptedException {
    pool.shutdownNow();
    pool.awaitTermination(10, TimeUnit.SECONDS);
    db.close();
  }

  @Test
  void eightConcurrentSqlEnqueuersOfOneDedupeKeyStoreOneTaskAndAllGetItsId() throws Exception {
    for (int round = 1; round <= ROUNDS; round++) {
      String key = "concurrent-sql-" + round;
      CyclicBarrier start = new CyclicBarrier(ENQUEUERS);
      List<Future<Long>> results = new ArrayList<>();
      for (int i = 0; i < ENQUEUERS; i++) {
        String kind = "kind-" + i; // the key is global: different kinds still dedupe
        results.add(pool.submit(onOwnConnection(c -> {
          c.setAutoCommit(false);
          start.await(10, TimeUnit.SECONDS);
          long id;
          try (PreparedStatement ps = c.prepareStatement("SELECT pgtask.enqueue(kind => ?, dedupe_key => ?)")) {
            ps.setString(1, kind);
            ps.setString(2, key);
            try (ResultSet rs = ps.executeQuery()) {
              rs.next();
              id = rs.getLong(1);
            }
          }
          c.commit();
          return id;
        })));
      }
      Set<Long> ids = new HashSet<>();
      for (Future<Long> f : results) {
        ids.add(f.get(30, TimeUnit.SECONDS)); // an exception in any enqueuer fails the test here
      }
      assertThat(ids).as("ids returned to %d concurrent enqueuers of key %s", ENQUEUERS, key).hasSize(1);
      assertThat(tasksWithKey(key)).as("tasks stored for key %s", key).isEqualTo(1);
      assertThat(idOfKey(key)).as("the stored task's id").isEqualTo(ids.iterator().next());
    }
  }

  @Test
  void eightConcurrentJavaBatchesWithOverlappingKeysInAnyOrderStoreOneTaskPerKey() throws Exception {
    Random random = new Random(42);
    for (int round = 1; round <= BATCH_ROUNDS; round++) {
      List<String> keys = new ArrayList<>();
      for (char k = 'a'; k <= 'p'; k++) {
        keys.add("batch-" + k + "-" + round);
      }
      CyclicBarrier start = new CyclicBarrier(ENQUEUERS);
      List<Future<Map<String, Long>>> results = new ArrayList<>();
      for (int i = 0; i < ENQUEUERS; i++) {
        List<String> order = new ArrayList<>(keys);
        Collections.shuffle(order, random);
        results.add(pool.submit(() -> {
          List<NewTask> batch = new ArrayList<>();
          for (String k : order) {
            batch.add(NewTask.of("batch.kind", Map.of("key", k), TaskOptions.defaults().withDedupeKey(k)));
          }
          start.await(10, TimeUnit.SECONDS);
          List<Long> ids = pgtask.enqueueAll(batch);
          Map<String, Long> byKey = new java.util.HashMap<>();
          for (int j = 0; j < order.size(); j++) {
            byKey.put(order.get(j), ids.get(j));
          }
          return byKey;
        }));
      }
      List<Map<String, Long>> all = new ArrayList<>();
      for (Future<Map<String, Long>> f : results) {
        all.add(f.get(30, TimeUnit.SECONDS));
      }
      for (String k : keys) {
        assertThat(all.stream().map(m -> m.get(k)).distinct()).as("ids returned for key %s", k).hasSize(1);
        assertThat(tasksWithKey(k)).as("tasks stored for key %s", k).isEqualTo(1);
      }
    }
  }

  @Test
  void anEnqueuerWaitsForAnUncommittedHolderAndInsertsWhenTheHolderRollsBack() throws Exception {
    String key = "rolled-back-holder";
    try (Connection holder = db.connect()) {
      holder.setAutoCommit(false);
      long heldId = queryLong(holder, "SELECT pgtask.enqueue(kind => 'holder', dedupe_key => '" + key + "')");
      Future<Long> waiter = pool.submit(() -> pgtask.enqueue(
          NewTask.of("waiter", Map.of(), TaskOptions.defaults().withDedupeKey(key))));
      // the waiter blocks on the holder's uncommitted row: wait for it to be waiting on a lock
      Awaitility.await("the second enqueuer waits on the holder's transaction").atMost(Duration.ofSeconds(10))
          .until(() -> {
            try (Connection c = db.connect()) {
              return queryLong(c, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                  + "AND wait_event_type = 'Lock' AND query LIKE '%enqueue%'") == 1;
            }
          });
      assertThat(waiter).as("the second enqueuer, while the holder is uncommitted").isNotDone();
      holder.rollback();
      long waiterId = waiter.get(10, TimeUnit.SECONDS);
      assertThat(waiterId).as("id the waiter got after the holder rolled back").isNotEqualTo(heldId);
      assertThat(idOfKey(key)).as("the task holding the key").isEqualTo(waiterId);
      assertThat(tasksWithKey(key)).as("tasks stored for the key").isEqualTo(1);
    }
  }

  @Test
  void duplicateKeysInsideOneJavaBatchStoreOneTaskAndRepeatItsId() throws Exception {
    TaskOptions a = TaskOptions.defaults().withDedupeKey("in-batch-a");
    List<Long> ids = pgtask.enqueueAll(List.of(
        NewTask.of("first", Map.of(), a),
        NewTask.of("second", Map.of(), a),
        NewTask.of("other", Map.of(), TaskOptions.defaults().withDedupeKey("in-batch-b")),
        NewTask.of("no-key", Map.of()),
        NewTask.of("third", Map.of(), a.withQueue("elsewhere"))));
    assertThat(ids.get(1)).as("id of the second task with key in-batch-a").isEqualTo(ids.get(0));
    assertThat(ids.get(4)).as("id of the third task with key in-batch-a, in another queue").isEqualTo(ids.get(0));
    assertThat(Set.copyOf(ids)).as("distinct tasks stored by the batch").hasSize(3);
    assertThat(tasksWithKey("in-batch-a")).as("tasks stored for key in-batch-a").isEqualTo(1);
    try (Connection c = db.connect()) {
      assertThat(queryLong(c, "SELECT count(*) FROM pgtask.task WHERE kind = 'first' AND dedupe_key = 'in-batch-a'"))
          .as("the first task of the batch holds the key").isEqualTo(1);
    }
    List<Long> again = pgtask.enqueueAll(List.of(NewTask.of("again", Map.of(), a)));
    assertThat(again).as("a later batch with a held key gets the holder's id").containsExactly(ids.get(0));
  }

  @Test
  void theKeyIsGlobalAcrossKindsAndQueues() throws Exception {
    long first = pgtask.enqueue(NewTask.of("kind.one", Map.of(), TaskOptions.defaults().withQueue("q1").withDedupeKey("global")));
    long second = pgtask.enqueue(NewTask.of("kind.two", Map.of("other", true),
        TaskOptions.defaults().withQueue("q2").withTenant("t").withDedupeKey("global")));
    assertThat(second).as("id for the same key from another kind and queue").isEqualTo(first);
    assertThat(tasksWithKey("global")).as("tasks stored for the key").isEqualTo(1);
  }

  @Test
  void aFinishedTaskFreesItsKeyAndAnUnfinishedOneHoldsIt() throws Exception {
    String key = "lifecycle";
    TaskOptions o = TaskOptions.defaults().withDedupeKey(key);
    long id = pgtask.enqueue(NewTask.of("k", Map.of(), o));
    try (Connection c = db.connect()) {
      exec(c, "UPDATE pgtask.task SET state = 'running', attempt = 1, owner = 'test-worker', "
          + "lease_until = now() + interval '1 minute' WHERE id = " + id);
      assertThat(pgtask.enqueue(NewTask.of("k", Map.of(), o))).as("id while the holder is running").isEqualTo(id);
      exec(c, "UPDATE pgtask.task SET state = 'retryable', owner = NULL, lease_until = NULL WHERE id = " + id);
      assertThat(pgtask.enqueue(NewTask.of("k", Map.of(), o))).as("id while the holder is retryable").isEqualTo(id);
      exec(c, "UPDATE pgtask.task SET state = 'available', run_at = now() + interval '1 day' WHERE id = " + id);
      assertThat(pgtask.enqueue(NewTask.of("k", Map.of(), o))).as("id while the holder is scheduled").isEqualTo(id);

      long previous = id;
      for (String finished : List.of("completed", "cancelled", "discarded")) {
        exec(c, "UPDATE pgtask.task SET state = '" + finished + "', finished_at = now() WHERE id = " + previous);
        long next = pgtask.enqueue(NewTask.of("k", Map.of(), o));
        assertThat(next).as("id after the holder was %s", finished).isNotEqualTo(previous);
        assertThat(queryLong(c, "SELECT count(*) FROM pgtask.task WHERE dedupe_key = '" + key
            + "' AND state IN ('available', 'running', 'retryable')")).as("unfinished tasks holding the key").isEqualTo(1);
        previous = next;
      }
      // and through SQL
      exec(c, "UPDATE pgtask.task SET state = 'completed', finished_at = now() WHERE id = " + previous);
      long viaSql = queryLong(c, "SELECT pgtask.enqueue(kind => 'k', dedupe_key => '" + key + "')");
      assertThat(viaSql).as("id from SQL after the holder completed").isNotEqualTo(previous);
      assertThat(queryLong(c, "SELECT pgtask.enqueue(kind => 'k', dedupe_key => '" + key + "')"))
          .as("id from SQL while the new holder is unfinished").isEqualTo(viaSql);
    }
  }

  /**
   * Batches sharing keys, while the tasks holding those keys finish and are deleted: before
   * enqueue_batch answered its held-back rows without inserting them out of key order, this
   * deadlocked (SQLSTATE 40P01) within seconds. The first error stops every batcher.
   */
  @Test
  void concurrentBatchesSharingKeysWhileTheirHoldersFinishNeverDeadlock() throws Exception {
    int batchers = 6;
    int calls = Integer.getInteger("pgtask.dedupe.churnCalls", 60);
    List<String> keys = new ArrayList<>();
    for (int k = 0; k < 24; k++) {
      keys.add(String.format("churn-%02d", k));
    }
    java.util.concurrent.atomic.AtomicBoolean done = new java.util.concurrent.atomic.AtomicBoolean();
    List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
    ExecutorService threads = Executors.newFixedThreadPool(batchers + 1);
    try {
      // the holders finish all the time: completed, cancelled, deleted while queued, and the
      // finished ones deleted too (as retention would)
      Future<?> finisher = threads.submit(onOwnConnection(c -> {
        Random random = new Random(7);
        try (var st = c.createStatement()) {
          while (!done.get()) {
            switch (random.nextInt(4)) {
              case 0 -> st.execute("UPDATE pgtask.task SET state = 'completed', finished_at = clock_timestamp() "
                  + "WHERE id IN (SELECT id FROM pgtask.task WHERE kind = 'churn' AND state = 'available' LIMIT 6)");
              case 1 -> st.execute("UPDATE pgtask.task SET state = 'cancelled', finished_at = clock_timestamp() "
                  + "WHERE id IN (SELECT id FROM pgtask.task WHERE kind = 'churn' AND state = 'available' ORDER BY id DESC LIMIT 6)");
              case 2 -> st.execute("DELETE FROM pgtask.task WHERE id IN "
                  + "(SELECT id FROM pgtask.task WHERE kind = 'churn' AND state = 'available' LIMIT 3)");
              default -> st.execute("DELETE FROM pgtask.task WHERE kind = 'churn' AND state IN ('completed', 'cancelled')");
            }
          }
        } catch (SQLException e) {
          errors.add(e);
        }
        return null;
      }));
      List<Future<Integer>> results = new ArrayList<>();
      for (int b = 0; b < batchers; b++) {
        long seed = b;
        results.add(threads.submit(onOwnConnection(c -> {
          Random random = new Random(seed);
          int answered = 0;
          try (PreparedStatement ps = c.prepareStatement(
              "SELECT count(id) FROM pgtask.enqueue_batch(kinds => ?, dedupe_keys => ?)")) {
            for (int i = 0; i < calls && errors.isEmpty(); i++) {
              List<String> mine = new ArrayList<>(keys);
              Collections.shuffle(mine, random);
              mine = mine.subList(0, 12);
              String[] kinds = new String[mine.size()];
              java.util.Arrays.fill(kinds, "churn");
              ps.setArray(1, c.createArrayOf("text", kinds));
              ps.setArray(2, c.createArrayOf("text", mine.toArray()));
              try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                if (rs.getInt(1) == mine.size()) {
                  answered++;
                }
              } catch (SQLException e) {
                errors.add(e);
              }
            }
          }
          return answered;
        })));
      }
      int answered = 0;
      for (Future<Integer> f : results) {
        answered += f.get(180, TimeUnit.SECONDS);
      }
      done.set(true);
      finisher.get(30, TimeUnit.SECONDS);
      assertThat(errors).as("errors of concurrent enqueue_batch calls (40P01: deadlock; 23505: unique violation)")
          .extracting(e -> e instanceof SQLException se ? se.getSQLState() + " " + se.getMessage() : e.toString())
          .isEmpty();
      assertThat(answered).as("calls that got an id for each of their tasks").isEqualTo(batchers * calls);
      System.out.printf("dedupe churn: %d enqueue_batch calls of 12 shared keys, no error%n", answered);
    } finally {
      done.set(true);
      threads.shutdownNow();
      threads.awaitTermination(10, TimeUnit.SECONDS);
    }
  }

  // ---- helpers ----

  private interface ConnectionWork<T> {
    T run(Connection c) throws Exception;
  }

  private static <T> Callable<T> onOwnConnection(ConnectionWork<T> work) {
    return () -> {
      try (Connection c = db.connect()) {
        return work.run(c);
      }
    };
  }

  private static long tasksWithKey(String key) throws SQLException {
    try (Connection c = db.dataSource().getConnection(); PreparedStatement ps = c.prepareStatement(
        "SELECT count(*) FROM pgtask.task WHERE dedupe_key = ?")) {
      ps.setString(1, key);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  private static long idOfKey(String key) throws SQLException {
    try (Connection c = db.connect(); PreparedStatement ps = c.prepareStatement(
        "SELECT id FROM pgtask.task WHERE dedupe_key = ?")) {
      ps.setString(1, key);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }
}
