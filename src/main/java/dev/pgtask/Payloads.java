package dev.pgtask;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.exc.StreamConstraintsException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.Locale;

/**
 * A task's payload as the JSON text {@code pgtask.enqueue} and {@code pgtask.update_task} take: a
 * record or other Jackson-serializable object, a {@code JsonNode}, or a JSON object string. The
 * database names the size limit a payload breaks; Jackson's messages, which quote the input, are
 * never passed on.
 */
final class Payloads {

  private final ObjectMapper objectMapper;
  /** Parses payload strings without read limits: the database names the limit a payload breaks. */
  private final JsonFactory unlimitedParser;

  Payloads(ObjectMapper objectMapper) {
    this.objectMapper = objectMapper;
    this.unlimitedParser = objectMapper.getFactory().rebuild()
        .streamReadConstraints(StreamReadConstraints.builder()
            .maxNestingDepth(Integer.MAX_VALUE).maxNumberLength(Integer.MAX_VALUE)
            .maxNameLength(Integer.MAX_VALUE).maxStringLength(Integer.MAX_VALUE).build())
        .build();
  }

  ObjectMapper objectMapper() {
    return objectMapper;
  }

  /**
   * {@code payload} as a JSON object's text ({@code null}: {@code {}}).
   *
   * @param index the task's position in its batch (from 0), or -1 for a task alone: named in the error
   * @throws InvalidTaskException not a JSON object, not serializable, or over a limit workers read with
   */
  String json(Object payload, int index) {
    if (payload == null) {
      return "{}";
    }
    try {
      JsonNode node;
      if (payload instanceof String s) {
        // every digit kept (a fraction as BigDecimal, not a double): what is stored is what was given
        node = objectMapper.reader().with(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
            .readTree(unlimitedParser.createParser(s));
      } else if (payload instanceof JsonNode n) {
        node = n;
      } else {
        // straight to text, without a tree in between (through the tree, 10,000 small records
        // took 1.5 to 3 times as long): Jackson writes an object as '{' first, anything else otherwise
        String json = objectMapper.writeValueAsString(payload);
        if (json.startsWith("{")) {
          return json;
        }
        node = objectMapper.readTree(json);
      }
      if (node == null || !node.isObject()) {
        throw new InvalidTaskException("task_payload_object", "pgtask: invalid task" + where(index)
            + ": payload must be a JSON object, not " + (node == null ? "empty" : node.getNodeType().name().toLowerCase(Locale.ROOT)));
      }
      return objectMapper.writeValueAsString(node);
    } catch (StreamConstraintsException e) {
      // a limit a worker reads with (PayloadLimits): Jackson's message gives lengths, not the input
      throw new InvalidTaskException(PayloadLimits.constraintOf(e), "pgtask: invalid task" + where(index)
          + ": payload breaks a limit workers read with: " + e.getOriginalMessage());
    } catch (java.io.IOException | IllegalArgumentException e) {
      // Jackson's messages quote the input: never pass them on
      throw new InvalidTaskException("task_payload_json", "pgtask: invalid task" + where(index)
          + ": payload is not valid JSON or cannot be serialized (" + e.getClass().getSimpleName() + ")");
    }
  }

  /** " (task n of the batch)" for a task of a batch, "" for a task alone. */
  static String where(int index) {
    return index < 0 ? "" : " (task " + (index + 1) + " of the batch)";
  }
}
