package dev.pgtask.internal;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Keeps passwords out of what pgtask prints: every message that may carry a JDBC URL or a driver's
 * error text (pgjdbc's "Unable to parse URL ..." quotes the whole URL) goes through here first.
 */
public final class Secrets {

  /** The mask that replaces a password. */
  public static final String MASK = "***";

  /** {@code password=...} as a URL parameter, up to the next separator. */
  private static final Pattern PASSWORD_PARAM = Pattern.compile("(?i)(password=)[^&;#\\s'\"]*");
  /** {@code scheme://user:password@host}: the password in a URI's user info. */
  private static final Pattern USERINFO_PASSWORD = Pattern.compile("(://[^/@:\\s'\"]*:)[^/@\\s'\"]*@");

  private Secrets() {}

  /** {@code text} with every URL password (parameter or user info) replaced by {@value #MASK}. */
  public static String redact(String text) {
    if (text == null || text.isEmpty()) {
      return text;
    }
    String s = PASSWORD_PARAM.matcher(text).replaceAll("$1" + Matcher.quoteReplacement(MASK));
    return USERINFO_PASSWORD.matcher(s).replaceAll("$1" + Matcher.quoteReplacement(MASK) + "@");
  }

  /**
   * {@code text} redacted as by {@link #redact(String)}, and with every literal occurrence of
   * {@code password} (as given and URL-encoded) replaced too: for messages written by others (the
   * driver, the pool), which may quote the password wherever they like.
   */
  public static String redact(String text, String password) {
    String s = redact(text);
    if (s == null || password == null || password.isEmpty()) {
      return s;
    }
    s = s.replace(password, MASK);
    String encoded = URLEncoder.encode(password, StandardCharsets.UTF_8);
    return encoded.equals(password) ? s : s.replace(encoded, MASK).replace(encoded.replace("+", "%20"), MASK);
  }
}
