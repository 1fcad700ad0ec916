package dev.pgtask.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgtask.testsupport.TestDatabase;
import java.io.IOException;
import java.io.OutputStream;
import java.io.RandomAccessFile;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code bin/pgtask}'s class data sharing archive speeds a command up and never breaks one: the
 * first command creates it, the next ones use it (picocli's Java 5 classes included), a short
 * command it does not cover is added to it, and a corrupt, truncated or stale archive, or a failed
 * first command, changes nothing in what a command prints or its exit code. The launcher
 * runs for real, on a copy of {@code bin/pgtask} next to a {@code target/pgtask-cli.jar} made of
 * the compiled classes (its manifest names the dependency jars).
 */
class LauncherCdsIT {

  private static TestDatabase db;

  @TempDir
  static Path root;

  private static Path jar;
  private static Path jsa;
  private static Path stamp;

  @BeforeAll
  static void fixture() throws Exception {
    db = TestDatabase.create("launcher_cds");
    try (var c = db.connect(); var st = c.createStatement()) {
      st.execute("SELECT pgtask.enqueue('report.build', '{}', 'reports', 'acme', '2030-01-01T00:00:00Z')");
    }
    Path bin = Files.createDirectories(root.resolve("bin"));
    Files.copy(Path.of("bin", "pgtask"), bin.resolve("pgtask"));
    Files.setPosixFilePermissions(bin.resolve("pgtask"), PosixFilePermissions.fromString("rwxr-xr-x"));
    Path target = Files.createDirectories(root.resolve("target"));
    jar = target.resolve("pgtask-cli.jar");
    jsa = target.resolve("pgtask-cli.jsa");
    stamp = target.resolve("pgtask-cli.jsa.ok");
    writeCliJar(jar);
  }

  @AfterAll
  static void drop() {
    db.close();
  }

  @Test
  void theArchiveIsCreatedUsedAndNeverBreaksACommand() throws Exception {
    Run reference = pgtask(Map.of("PGTASK_CDS", "off"), "tasks", "--url", db.fullUrl());
    assertThat(reference.code).as("stderr: %s", reference.err).isZero();
    assertThat(reference.out).contains("report.build").contains("acme");
    assertThat(jsa).as("no archive with PGTASK_CDS=off").doesNotExist();

    // a failed first command keeps no archive, and its exit code passes through
    Run unreachable = pgtask(Map.of(), "tasks", "--url", "jdbc:postgresql://127.0.0.1:1/nowhere?user=x");
    assertThat(unreachable.code).isEqualTo(ExitCodes.CANNOT_CONNECT);
    assertThat(unreachable.out).isEmpty();
    assertThat(unreachable.err.lines()).singleElement().asString().contains("cannot connect");
    assertThat(jsa).as("archive of a failed command").doesNotExist();

    // the first command that succeeds creates it (same output), the next one maps its classes from it
    assertSameAs(reference, pgtask(Map.of(), "tasks", "--url", db.fullUrl()));
    assertThat(jsa).as("archive after the first command").isNotEmptyFile();
    assertThat(stamp).isNotEmptyFile();
    Path classLog = root.resolve("classes.log");
    assertSameAs(reference, pgtask(Map.of("PGTASK_JAVA_OPTS", "-Xlog:class+load=info:file=" + classLog),
        "tasks", "--url", db.fullUrl()));
    assertThat(Files.readAllLines(classLog)).as("how TasksCommand and picocli (Java 5 classes) were loaded")
        .anyMatch(l -> l.contains(" dev.pgtask.cli.TasksCommand source: shared objects file"))
        .anyMatch(l -> l.contains(" picocli.CommandLine source: shared objects file"));

    // a short command the archive does not cover yet runs once with its classes listed, and the
    // archive made again covers it too (status formats a float: JDK classes tasks never loads).
    // status shows the server's oldest open transaction, which other clients change: not compared
    for (Map<String, String> env : List.of(Map.<String, String>of(), Map.of("PGTASK_JAVA_OPTS",
        "-Xlog:class+load=info:file=" + root.resolve("status-classes.log")))) {
      Run status = pgtask(env, "status", "--url", db.fullUrl());
      assertThat(status.code).as("stderr: %s", status.err).isZero();
      assertThat(status.err).isEmpty();
      assertThat(status.out).contains("reports", "acme", "maintenance leader");
    }
    Path statusLog = root.resolve("status-classes.log");
    assertThat(Files.readAllLines(statusLog)).as("how status's own classes were loaded")
        .anyMatch(l -> l.contains(" jdk.internal.math.FormattedFloatingDecimal source: shared objects file"))
        .anyMatch(l -> l.contains(" dev.pgtask.cli.TasksCommand source: shared objects file"));
    assertSameAs(reference, pgtask(Map.of(), "tasks", "--url", db.fullUrl()));

    // corrupt in place (same size): the JVM's checksums refuse it, the command runs without it
    jsa.toFile().setWritable(true);
    try (RandomAccessFile f = new RandomAccessFile(jsa.toFile(), "rw")) {
      for (long at = 4096; at < f.length(); at += 65_536) {
        f.seek(at);
        f.write(new byte[64]);
      }
    }
    assertSameAs(reference, pgtask(Map.of(), "tasks", "--url", db.fullUrl()));

    // truncated (the JVM would crash on it): not given to the JVM, made again by the command
    jsa.toFile().setWritable(true);
    try (RandomAccessFile f = new RandomAccessFile(jsa.toFile(), "rw")) {
      f.setLength(f.length() / 2);
    }
    assertSameAs(reference, pgtask(Map.of(), "tasks", "--url", db.fullUrl()));
    assertThat(Files.readString(stamp)).as("stamp of the archive made again").startsWith(Files.size(jsa) + " ");

    // stale: a jar newer than the archive gets a new archive (the archive dated back, not the jar
    // dated ahead: a jar dated ahead stays newer than an archive made at once on a fast machine)
    Files.setLastModifiedTime(jsa, FileTime.from(Files.getLastModifiedTime(jar).toInstant().minusSeconds(60)));
    assertSameAs(reference, pgtask(Map.of(), "tasks", "--url", db.fullUrl()));
    assertThat(Files.getLastModifiedTime(jsa)).as("archive time vs jar time")
        .isGreaterThanOrEqualTo(Files.getLastModifiedTime(jar));
    assertSameAs(reference, pgtask(Map.of(), "tasks", "--url", db.fullUrl()));
  }

  private static void assertSameAs(Run reference, Run run) {
    assertThat(run.code).as("exit code; stderr: %s", run.err).isEqualTo(reference.code);
    assertThat(run.out).as("stdout").isEqualTo(reference.out);
    assertThat(run.err).as("stderr").isEqualTo(reference.err);
  }

  private record Run(int code, String out, String err) {}

  private static Run pgtask(Map<String, String> env, String... args) throws Exception {
    List<String> cmd = new ArrayList<>(List.of("bash", root.resolve("bin/pgtask").toString()));
    cmd.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(cmd);
    pb.environment().remove("PGTASK_CDS");
    pb.environment().remove("PGTASK_JAVA_OPTS");
    pb.environment().remove("PGTASK_URL");
    pb.environment().putAll(env);
    pb.environment().put("PATH", Path.of(System.getProperty("java.home"), "bin") + ":" + System.getenv("PATH"));
    Path out = Files.createTempFile(root, "out", ".txt");
    Path err = Files.createTempFile(root, "err", ".txt");
    Process p = pb.redirectOutput(out.toFile()).redirectError(err.toFile()).start();
    if (!p.waitFor(120, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError("bin/pgtask " + String.join(" ", args) + " did not finish in 120 s");
    }
    return new Run(p.exitValue(), Files.readString(out), Files.readString(err));
  }

  /**
   * The compiled classes in a jar whose manifest runs {@link Main} with the dependency jars (by relative
   * paths): the CLI's classes (compiled with the tests) and, when it is a folder, the library's
   * (target/classes in a surefire run; failsafe's class path has the library jar, named in the manifest).
   */
  private static void writeCliJar(Path jar) throws IOException {
    Path cliClasses = Path.of(Main.class.getProtectionDomain().getCodeSource().getLocation().getPath());
    Path libraryClasses = Path.of(dev.pgtask.PgTask.class.getProtectionDomain().getCodeSource().getLocation().getPath());
    List<String> classPath = new ArrayList<>();
    for (String entry : System.getProperty("java.class.path").split(java.io.File.pathSeparator)) {
      if (entry.endsWith(".jar")) {
        // relative to the jar, as class data sharing reads a Class-Path (it skips absolute URLs)
        classPath.add(jar.getParent().relativize(Path.of(entry).toAbsolutePath()).toString());
      }
    }
    Manifest manifest = new Manifest();
    manifest.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
    manifest.getMainAttributes().put(Attributes.Name.MAIN_CLASS, Main.class.getName());
    manifest.getMainAttributes().put(Attributes.Name.CLASS_PATH, String.join(" ", classPath));
    try (OutputStream file = Files.newOutputStream(jar); JarOutputStream out = new JarOutputStream(file, manifest)) {
      List<Path> roots = new ArrayList<>(List.of(cliClasses.resolve("dev/pgtask/cli"),
          cliClasses.resolve("dev/pgtask/internal/embedded")));
      if (Files.isDirectory(libraryClasses)) {
        roots.add(libraryClasses);
      }
      for (Path root : roots) {
        Files.walkFileTree(root, new SimpleFileVisitor<>() {
          @Override
          public FileVisitResult visitFile(Path f, BasicFileAttributes attrs) throws IOException {
            String name = (root == libraryClasses ? libraryClasses : cliClasses).relativize(f).toString().replace('\\', '/');
            out.putNextEntry(new JarEntry(name));
            Files.copy(f, out);
            out.closeEntry();
            return FileVisitResult.CONTINUE;
          }
        });
      }
    }
  }
}
