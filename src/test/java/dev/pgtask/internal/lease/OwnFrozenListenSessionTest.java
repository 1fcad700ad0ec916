package dev.pgtask.internal.lease;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgtask.NewTask;
import dev.pgtask.PgTaskWorker;
import dev.pgtask.testsupport.Db;
import dev.pgtask.testsupport.FreezingProxy;
import dev.pgtask.testsupport.TestDatabase;
import dev.pgtask.testsupport.WorkerFixture;
import java.net.URI;
import java.sql.DriverManager;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A worker whose own LISTEN session freezes inside a round that renewed the leases of its waiting
 * tasks (the round's row locks held by a backend whose client no longer answers) keeps completing
 * those tasks: the server ends the frozen round within the short transaction bound, and the task
 * transaction's re-lock waits longer than that, so each task runs in its first attempt instead of
 * waiting behind its own worker's frozen session.
 */
class OwnFrozenListenSessionTest {

  TestDatabase db;
  Db sql;
  FreezingProxy proxy;
  HikariDataSource pool;

  @RegisterExtension
  final WorkerFixture workers = WorkerFixture.on(() -> db, () -> pool);

  @BeforeEach
  void setUp() throws Exception {
    db = TestDatabase.create("own_frozen_listen");
    sql = new Db(db);
    URI u = URI.create(db.fullUrl().substring("jdbc:".length()));
    proxy = FreezingProxy.to(u.getHost(), u.getPort() < 0 ? 5432 : u.getPort());
    pool = db.pool(4);
  }

  @AfterEach
  void tearDown() throws Exception {
    pool.close();
    proxy.close();
    sql.exec("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() "
        + "AND pid <> pg_backend_pid()");
    db.close();
  }

  @Test
  void aWorkerWhoseOwnListenSessionFrozeInALeaseRenewalKeepsCompletingItsTasks() throws Exception {
    URI u = URI.create(db.fullUrl().substring("jdbc:".length()));
    // every statement's text goes over the wire (nothing prepared on the server), so the proxy sees it
    String listenUrl = "jdbc:postgresql://127.0.0.1:" + proxy.port() + u.getRawPath() + "?"
        + (u.getRawQuery() == null ? "" : u.getRawQuery() + "&") + "prepareThreshold=0";
    // the lease renewal is the only statement on the LISTEN session that reads the task table as "h"
    proxy.freezeAtCommit("as \"h\"");
    try (PgTaskWorker worker = workers.builder().concurrency(1).prefetch(12)
        .leaseDuration(Duration.ofSeconds(10)).rescueInterval(Duration.ofSeconds(1))
        .pollInterval(Duration.ofMillis(500))
        .listenConnection(() -> DriverManager.getConnection(listenUrl))
        .handler("own.frozen", JsonNode.class, (ctx, p) -> Thread.sleep(300)) // the task's work
        .build().start()) {
      List<NewTask> tasks = new ArrayList<>();
      for (int i = 0; i < 12; i++) {
        tasks.add(NewTask.of("own.frozen", Map.of()));
      }
      dev.pgtask.PgTask.create(pool).enqueueAll(tasks);
      // 12 tasks of 300 ms: 3.6 s of work, plus the frozen round's bound (1 s) and the re-lock's wait
      await("the worker's tasks completed").atMost(Duration.ofSeconds(30))
          .until(() -> sql.count("SELECT count(*) FROM pgtask.task WHERE state = 'completed'") == 12);
      assertThat(proxy.frozenCount()).as("LISTEN sessions frozen inside a lease renewal (the precondition)").isEqualTo(1);
      assertThat(sql.rows("SELECT id || ' attempt ' || attempt || ' ' || coalesce(errors::text, '') FROM pgtask.task "
          + "WHERE attempt <> 1 OR errors IS NOT NULL")).as("tasks that did not complete in their first attempt").isEmpty();
    }
  }
}
