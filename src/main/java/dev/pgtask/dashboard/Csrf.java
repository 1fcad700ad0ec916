package dev.pgtask.dashboard;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Base64;

/**
 * The cross-site request guard: a per-session random token in a {@code SameSite=Strict},
 * {@code HttpOnly} cookie, repeated in a hidden field of every action's form; a POST is accepted
 * only when both are present and equal. Another site can neither read the cookie (to copy it into
 * its form) nor make the browser send it with a cross-site request.
 */
final class Csrf {

  static final String COOKIE = "pgtask_csrf";
  static final String FIELD = "csrf";

  private static final SecureRandom RANDOM = new SecureRandom();

  private final String token;
  private final boolean fresh;

  private Csrf(String token, boolean fresh) {
    this.token = token;
    this.fresh = fresh;
  }

  /** The session's token from its cookie, or a new one when it has none (or a malformed one). */
  static Csrf of(DashboardRequest request) {
    String cookie = request.cookies().get(COOKIE);
    if (cookie != null && cookie.matches("[A-Za-z0-9_-]{43}")) {
      return new Csrf(cookie, false);
    }
    byte[] bytes = new byte[32];
    RANDOM.nextBytes(bytes);
    return new Csrf(Base64.getUrlEncoder().withoutPadding().encodeToString(bytes), true);
  }

  String token() {
    return token;
  }

  /** The {@code Set-Cookie} value when the token is new, else null. */
  String setCookie(String basePath) {
    return fresh ? COOKIE + "=" + token + "; Path=" + (basePath.isEmpty() ? "/" : basePath)
        + "; HttpOnly; SameSite=Strict" : null;
  }

  /** Whether {@code request} (a POST) carries the cookie and the same token in its form. */
  static boolean accepts(DashboardRequest request) {
    String cookie = request.cookies().get(COOKIE);
    String field = request.form().get(FIELD);
    return cookie != null && field != null && !cookie.isEmpty()
        && MessageDigest.isEqual(cookie.getBytes(StandardCharsets.UTF_8), field.getBytes(StandardCharsets.UTF_8));
  }
}
