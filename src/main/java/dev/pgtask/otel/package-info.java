/**
 * OpenTelemetry tracing for pgtask (optional: needs {@code io.opentelemetry:opentelemetry-api} on
 * the classpath; nothing else in pgtask loads it). See {@link dev.pgtask.otel.OpenTelemetryTracing}.
 */
package dev.pgtask.otel;
