package dev.pgtask.internal;

import dev.pgtask.HandlerOptions;
import dev.pgtask.TaskHandler;

/**
 * A registered handler: its payload type ({@code JsonNode} for raw), the handler and its options.
 *
 * @param <T> payload type
 */
public record HandlerEntry<T>(String kind, Class<T> payloadType, TaskHandler<T> handler, HandlerOptions options) {}
