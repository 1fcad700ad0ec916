package dev.pgtask.worker;

import dev.pgtask.PgTaskWorker;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * Prints this process's pid and the default worker ids a process gets (the library's, then the
 * CLI's), one per line; {@link WorkerIdTest} runs it as separate processes. Connects to nothing.
 */
public final class PrintDefaultWorkerId {

  private PrintDefaultWorkerId() {}

  public static void main(String[] args) {
    PgTaskWorker worker = PgTaskWorker.builder(new PGSimpleDataSource()).handler("print.id", (ctx, p) -> { }).build();
    System.out.println(ProcessHandle.current().pid());
    System.out.println(worker.workerId());
    System.out.println(dev.pgtask.internal.WorkerIds.processId());
  }
}
