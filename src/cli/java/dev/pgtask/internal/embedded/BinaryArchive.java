package dev.pgtask.internal.embedded;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.Set;
import java.util.stream.Stream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.apache.commons.compress.compressors.xz.XZCompressorInputStream;

/**
 * The server's binaries on disk: the archive unpacked once per content (by SHA-256) under a shared
 * root, and deleting a directory tree.
 */
final class BinaryArchive {

  private BinaryArchive() {}

  /** Unpacks the archive once per content (by SHA-256) under {@code root}; returns its directory. */
  static Path unpack(EmbeddedPostgres.Binaries binaries, Path root) throws IOException {
    byte[] archive;
    try (InputStream in = binaries.open()) {
      archive = in.readAllBytes();
    }
    String sha;
    try {
      sha = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(archive)).substring(0, 16);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
    Path target = root.resolve("bin-" + sha);
    if (Files.isExecutable(target.resolve("bin").resolve("pg_ctl"))) {
      return target;
    }
    Path tmp = Files.createTempDirectory(root, "unpack-");
    try {
      try (TarArchiveInputStream tar = new TarArchiveInputStream(
          new XZCompressorInputStream(new ByteArrayInputStream(archive)))) {
        TarArchiveEntry entry;
        while ((entry = tar.getNextEntry()) != null) {
          Path to = tmp.resolve(entry.getName()).normalize();
          if (!to.startsWith(tmp)) {
            throw new IOException("unsafe path in " + binaries + ": " + entry.getName());
          }
          if (entry.isDirectory()) {
            Files.createDirectories(to);
          } else if (entry.isSymbolicLink()) {
            Files.createDirectories(to.getParent());
            Files.createSymbolicLink(to, Path.of(entry.getLinkName()));
          } else {
            Files.createDirectories(to.getParent());
            Files.copy(tar, to, StandardCopyOption.REPLACE_EXISTING);
            Files.setPosixFilePermissions(to, permissions(entry.getMode()));
          }
        }
      }
      try (Stream<Path> dirs = Files.walk(tmp)) {
        for (Path d : (Iterable<Path>) dirs.filter(Files::isDirectory)::iterator) {
          Files.setPosixFilePermissions(d, PosixFilePermissions.fromString("rwxr-xr-x"));
        }
      }
      try {
        Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE);
      } catch (FileAlreadyExistsException | AtomicMoveNotSupportedException e) {
        // unpacked by a concurrent process meanwhile (or not movable atomically): use theirs
        if (!Files.isExecutable(target.resolve("bin").resolve("pg_ctl"))) {
          throw e;
        }
      } catch (IOException e) {
        if (!Files.isExecutable(target.resolve("bin").resolve("pg_ctl"))) {
          throw e;
        }
      }
    } finally {
      deleteTree(tmp);
    }
    return target;
  }

  private static Set<PosixFilePermission> permissions(int mode) {
    StringBuilder s = new StringBuilder();
    String letters = "rwxrwxrwx";
    for (int i = 0; i < 9; i++) {
      s.append((mode & (1 << (8 - i))) != 0 ? letters.charAt(i) : '-');
    }
    return PosixFilePermissions.fromString(s.toString());
  }

  static void deleteTree(Path root) throws IOException {
    if (!Files.exists(root, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
      return;
    }
    try (Stream<Path> paths = Files.walk(root)) {
      for (Path p : (Iterable<Path>) paths.sorted(Comparator.reverseOrder())::iterator) {
        Files.deleteIfExists(p);
      }
    } catch (UncheckedIOException e) {
      throw e.getCause();
    }
  }
}
