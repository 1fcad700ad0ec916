package dev.pgtask.cli;

import java.util.ArrayList;
import java.util.List;

/**
 * A child JVM's entry point for {@link OpsCommandsStartupIT}: runs several commands through
 * {@link Main#run} (what {@code Main.main} does, without its {@code System.exit}), the argument
 * lists separated by {@code ;}, and prints each exit code on stderr as {@code exit N}.
 */
public final class OpsCommandsProbe {

  private OpsCommandsProbe() {}

  public static void main(String[] args) {
    List<String> command = new ArrayList<>();
    for (int i = 0; i <= args.length; i++) {
      if (i == args.length || args[i].equals(";")) {
        System.err.println("exit " + Main.run(command.toArray(String[]::new)));
        command.clear();
      } else {
        command.add(args[i]);
      }
    }
    System.exit(0);
  }
}
