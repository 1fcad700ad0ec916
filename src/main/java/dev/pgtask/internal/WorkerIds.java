package dev.pgtask.internal;

import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Default worker ids: {@code host:pid-xxxx}, where {@code xxxx} is four random base-36 characters
 * drawn once per process start. A container restarted with the same host name, whose JVM is PID 1
 * again, therefore gets a new id, not its dead predecessor's (whose tasks and registry row are the
 * rescue's to deal with). The n-th default worker of one process adds {@code #n} (n > 1).
 *
 * <p>Length: the host is cut to 24 characters ({@link Hosts}), so with a pid of up to 7 digits a
 * default id has at most 37 characters (40 with {@code #n}): {@code "pgtask listen <id>"} and
 * {@code "pgtask <id>"} keep it whole within application_name's 63 bytes, and
 * {@code "pgtask task <task id> <id>"} does for task ids of up to 10 digits.
 */
public final class WorkerIds {

  private static final String ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz";
  private static final String PROCESS_ID = Hosts.shortHostName() + ":" + ProcessHandle.current().pid() + "-" + suffix();
  private static final AtomicInteger DEFAULTS = new AtomicInteger();
  /** application_name's limit (NAMEDATALEN - 1 bytes); the server cuts longer names. */
  public static final int APPLICATION_NAME_BYTES = 63;

  private WorkerIds() {}

  /** This process start's id, {@code host:pid-xxxx} (the CLI worker's default). */
  public static String processId() {
    return PROCESS_ID;
  }

  /** The next default id of a worker of this process: {@link #processId()}, then {@code #2}, {@code #3}, ... */
  public static String nextDefault() {
    int n = DEFAULTS.incrementAndGet();
    return PROCESS_ID + (n > 1 ? "#" + n : "");
  }

  /**
   * The application_name of a worker's LISTEN session, as it sets it; null when that name would be
   * cut at 63 bytes (then it does not name the worker alone).
   */
  public static String listenSessionName(String workerId) {
    String name = "pgtask listen " + workerId;
    return name.getBytes(StandardCharsets.UTF_8).length <= APPLICATION_NAME_BYTES ? name : null;
  }

  private static String suffix() {
    SecureRandom random = new SecureRandom();
    StringBuilder b = new StringBuilder(4);
    for (int i = 0; i < 4; i++) {
      b.append(ALPHABET.charAt(random.nextInt(ALPHABET.length())));
    }
    return b.toString();
  }
}
