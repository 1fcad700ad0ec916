/**
 * The command line behind {@code bin/pgtask} (picocli; its dependencies are optional for library
 * users and shaded into {@code target/pgtask-cli.jar}). {@link dev.pgtask.cli.Main} wires the
 * subcommands, each its own class listed in {@code Main.SUBCOMMANDS}, and turns failures into one
 * line on stderr and an {@link dev.pgtask.cli.ExitCodes exit code}. {@link dev.pgtask.cli.ConnectionSettings}
 * resolves where to connect ({@code --url}, {@code PGTASK_URL}, the libpq variables) and
 * {@link dev.pgtask.cli.DemoHandlers} holds the demo kinds the demo and the acceptance tests rely on.
 */
package dev.pgtask.cli;
