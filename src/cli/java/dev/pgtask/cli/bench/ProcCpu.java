package dev.pgtask.cli.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** A local process's CPU time (user + system, all its threads) from {@code /proc/<pid>/stat}. */
final class ProcCpu {

  static final double CLOCK_TICKS_PER_SECOND = 100.0; // USER_HZ on Linux

  private ProcCpu() {}

  /** utime + stime of {@code pid} in clock ticks, or -1 when it cannot be read (ended, not here, not allowed). */
  static long ticks(long pid) {
    try {
      String s = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
      // the fields after the command name, which is in parentheses and may contain spaces
      String[] f = s.substring(s.lastIndexOf(')') + 2).split(" ");
      return Long.parseLong(f[11]) + Long.parseLong(f[12]);
    } catch (IOException | RuntimeException e) {
      return -1;
    }
  }

  /** Whether {@code pid} is a local PostgreSQL process (its command line starts with "postgres"). */
  static boolean isLocalPostgres(long pid) {
    try {
      return Files.readString(Path.of("/proc", Long.toString(pid), "cmdline")).startsWith("postgres");
    } catch (IOException | RuntimeException e) {
      return false;
    }
  }

  static double millis(long ticks) {
    return ticks * 1000.0 / CLOCK_TICKS_PER_SECOND;
  }
}
