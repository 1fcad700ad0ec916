package dev.pgtask.dashboard;

/** A request the dashboard refuses as it stands (answered 400 with this message; nothing read or changed). */
final class BadRequest extends RuntimeException {
  BadRequest(String message) {
    super(message);
  }
}
