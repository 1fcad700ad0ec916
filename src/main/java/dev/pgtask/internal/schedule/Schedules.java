package dev.pgtask.internal.schedule;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgtask.InvalidScheduleException;
import dev.pgtask.Schedule;
import dev.pgtask.ScheduleInfo;
import dev.pgtask.internal.sql.ScheduleQueries;
import dev.pgtask.internal.sql.Sql;
import dev.pgtask.internal.sql.TxBounds;
import dev.pgtask.internal.sql.gen.tables.records.SchedulesRecord;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import javax.sql.DataSource;
import org.jooq.DSLContext;
import org.jooq.exception.DataAccessException;
import org.postgresql.util.PSQLException;
import org.postgresql.util.ServerErrorMessage;

/**
 * Declaring, changing and listing schedules: {@code PgTask}'s and the worker's way in. Every
 * declaration goes through {@code pgtask.schedule}, which checks it (the cron expression with
 * {@code pgtask.cron_parse}, the one cron parser); its refusal becomes
 * {@link InvalidScheduleException} with the database's message ({@link #translate}).
 */
public final class Schedules {

  private Schedules() {}

  /**
   * Declares {@code schedule} (an idempotent upsert by name) and returns its next fire instant.
   *
   * @throws InvalidScheduleException the database refused it; nothing is stored
   */
  public static Instant declare(DSLContext dsl, ObjectMapper mapper, Schedule schedule) {
    String payload = payloadJson(mapper, schedule.payload());
    try {
      return ScheduleQueries.schedule(dsl, schedule.name(), schedule.cron(), schedule.kind(), payload,
          schedule.queue(), schedule.tenant(), schedule.zone().getId(), schedule.catchUp(), schedule.allowOverlap(),
          schedule.jitter(), schedule.priority(), schedule.maxAttempts());
    } catch (RuntimeException e) {
      throw translate(e);
    }
  }

  /** The bounds of the start's declaration transaction: a declaration reads the zone names (a quarter of a second). */
  private static final TxBounds DECLARE_ALL_BOUNDS =
      new TxBounds(Duration.ofSeconds(30), Duration.ofSeconds(10), Duration.ofSeconds(30));

  /**
   * Declares a worker's schedules at its start, all or none: in one transaction, each in a
   * savepoint, in name order (two workers starting with the same schedules lock them in the same
   * order). Every invalid schedule is found; when there is one, nothing is declared and one
   * {@link InvalidScheduleException} names each: the database's own exception for a single one,
   * else one whose message lists them by schedule name (the others as suppressed exceptions).
   */
  public static void declareAll(DataSource dataSource, ObjectMapper mapper, Collection<Schedule> schedules) {
    if (schedules.isEmpty()) {
      return;
    }
    List<Schedule> byName = new ArrayList<>(schedules);
    byName.sort(Comparator.comparing(Schedule::name));
    DECLARE_ALL_BOUNDS.inTransaction(dataSource, dsl -> {
      Connection c = dsl.configuration().connectionProvider().acquire();
      List<InvalidScheduleException> invalid = new ArrayList<>();
      List<String> names = new ArrayList<>();
      for (Schedule s : byName) {
        try {
          Savepoint sp = c.setSavepoint();
          try {
            declare(Sql.using(c), mapper, s);
            c.releaseSavepoint(sp);
          } catch (InvalidScheduleException e) {
            c.rollback(sp);
            invalid.add(e);
            names.add(s.name());
          }
        } catch (SQLException e) {
          throw new DataAccessException(e.getMessage(), e);
        }
      }
      if (!invalid.isEmpty()) {
        throw combined(names, invalid); // rolls the transaction back: none is declared
      }
      return null;
    });
  }

  private static InvalidScheduleException combined(List<String> names, List<InvalidScheduleException> invalid) {
    if (invalid.size() == 1) {
      return invalid.get(0);
    }
    StringBuilder m = new StringBuilder("pgtask: invalid schedules (none declared):");
    for (int i = 0; i < invalid.size(); i++) {
      m.append(i == 0 ? " " : "; ").append('"').append(names.get(i)).append("\": ")
          .append(invalid.get(i).getMessage().replaceFirst("^pgtask: invalid schedule: ", ""));
    }
    InvalidScheduleException e = new InvalidScheduleException(invalid.get(0).constraint(), m.toString(), invalid.get(0));
    invalid.subList(1, invalid.size()).forEach(e::addSuppressed);
    return e;
  }

  /** The schedules as {@code pgtask.schedules} shows them, by name. */
  public static List<ScheduleInfo> list(DSLContext dsl) {
    List<ScheduleInfo> out = new ArrayList<>();
    for (SchedulesRecord r : ScheduleQueries.selectSchedules(dsl)) {
      out.add(info(r));
    }
    return out;
  }

  /** One row of the view as a {@link ScheduleInfo}. */
  public static ScheduleInfo info(SchedulesRecord r) {
    Duration jitter = r.getJitter() == null ? Duration.ZERO : r.getJitter().toDuration();
    return new ScheduleInfo(r.getName(), r.getCron(), r.getKind(), r.getQueue(), r.getTenant(), r.getTimeZone(),
        Boolean.TRUE.equals(r.getPaused()), r.getNextFireAt(), r.getLastFireAt(), r.getLastTaskId(),
        r.getLastTaskState(), r.getPayload() == null ? "{}" : r.getPayload().data(), r.getCatchUp(),
        Boolean.TRUE.equals(r.getAllowOverlap()), jitter, r.getPriority(), r.getMaxAttempts(), r.getFired(),
        r.getOverlapped(), r.getLastMissedAt(), r.getMissedPending(), Boolean.TRUE.equals(r.getQueuePaused()));
  }

  /** An invalid declaration (SQLSTATE 23514) as {@link InvalidScheduleException}; anything else unchanged. */
  public static RuntimeException translate(RuntimeException e) {
    for (Throwable c = e; c != null; c = c.getCause()) {
      if (c instanceof PSQLException p && "23514".equals(p.getSQLState())) {
        ServerErrorMessage m = p.getServerErrorMessage();
        String message = m == null ? null : m.getMessage();
        String constraint = m == null ? null : m.getConstraint();
        return new InvalidScheduleException(constraint,
            message != null && message.startsWith("pgtask:") ? message : "pgtask: invalid schedule: violates " + constraint, e);
      }
      if (c.getCause() == c) {
        break;
      }
    }
    return e;
  }

  static String payloadJson(ObjectMapper mapper, Object payload) {
    if (payload == null) {
      return "{}";
    }
    try {
      JsonNode node = payload instanceof String s ? mapper.readTree(s)
          : payload instanceof JsonNode n ? n : mapper.valueToTree(payload);
      if (node == null || !node.isObject()) {
        throw new InvalidScheduleException("task_payload_object", "pgtask: invalid schedule: payload must be a JSON "
            + "object, not " + (node == null ? "empty" : node.getNodeType().name().toLowerCase(Locale.ROOT)));
      }
      return mapper.writeValueAsString(node);
    } catch (JsonProcessingException | IllegalArgumentException e) {
      // Jackson's messages quote the input: never pass them on
      throw new InvalidScheduleException("task_payload_json", "pgtask: invalid schedule: payload is not valid JSON "
          + "or cannot be serialized (" + e.getClass().getSimpleName() + ")");
    }
  }
}
