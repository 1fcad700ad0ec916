package dev.pgtask.internal.embedded;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;

/**
 * Running the embedded server as an unprivileged OS user when this process is root (PostgreSQL
 * refuses to run as root): the {@code setpriv} prefix for its commands, and handing it its files.
 */
final class RunAsUser {

  private RunAsUser() {}

  static boolean isRoot() {
    try {
      return ((Number) Files.getAttribute(Path.of("/proc/self"), "unix:uid")).intValue() == 0;
    } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
      return "root".equals(System.getProperty("user.name"));
    }
  }

  static List<String> runAsPrefix(String user) throws IOException {
    String uid = id(user, "-u");
    String gid = id(user, "-g");
    if ("0".equals(uid)) {
      throw new IOException("PostgreSQL refuses to run as root, and the OS user '" + user + "' chosen to run the"
          + " embedded server is root too: set PGTASK_EMBEDDED_USER to an unprivileged OS user");
    }
    for (String dir : List.of("/usr/bin", "/bin", "/usr/sbin", "/sbin")) {
      if (Files.isExecutable(Path.of(dir, "setpriv"))) {
        return List.of(dir + "/setpriv", "--reuid=" + uid, "--regid=" + gid, "--clear-groups", "--");
      }
    }
    throw new IOException("PostgreSQL refuses to run as root, and this process is root: the embedded server would"
        + " run as OS user '" + user + "' through setpriv (util-linux), which is not installed. Install util-linux,"
        + " run as a non-root user, or configure a PostgreSQL server");
  }

  private static String id(String user, String flag) throws IOException {
    Process p = new ProcessBuilder("id", flag, user).redirectErrorStream(true).start();
    try {
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
      if (p.waitFor() != 0) {
        throw new IOException("PostgreSQL refuses to run as root, and this process is root: the embedded server"
            + " runs as an unprivileged OS user, but '" + user + "' does not exist (" + out + "). Set"
            + " PGTASK_EMBEDDED_USER (or -Dpgtask.embedded.user) to an existing unprivileged user, create one"
            + " (useradd), run as a non-root user, or configure a PostgreSQL server");
      }
      return out;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted", e);
    }
  }

  static void chown(Path path, String user) throws IOException {
    Files.setAttribute(path, "unix:uid", Integer.parseInt(id(user, "-u")));
    Files.setAttribute(path, "unix:gid", Integer.parseInt(id(user, "-g")));
  }
}
