package dev.pgtask.spring.workeronly;

import dev.pgtask.TaskArgs;
import dev.pgtask.TaskContext;
import dev.pgtask.TaskKind;
import dev.pgtask.spring.PgTaskHandler;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;

/** An application that is only a worker: no web server; its main returns at once. */
@SpringBootApplication
public class WorkerOnlyApplication {

  @TaskKind("workeronly.write")
  public record Write(String label) implements TaskArgs {}

  @TaskKind("workeronly.slow")
  public record Slow(int n) implements TaskArgs {}

  @Component
  public static class WriteHandler implements PgTaskHandler<Write> {
    private final JdbcTemplate jdbc;

    public WriteHandler(JdbcTemplate jdbc) {
      this.jdbc = jdbc;
    }

    @Override
    public void handle(TaskContext ctx, Write w) {
      jdbc.update("INSERT INTO written (label) VALUES (?)", w.label());
    }
  }

  @Component
  public static class SlowHandler implements PgTaskHandler<Slow> {
    @Override
    public void handle(TaskContext ctx, Slow s) throws InterruptedException {
      System.out.println("slow handler started");
      Thread.sleep(600_000); // until interrupted by the shutdown
    }
  }

  public static void main(String[] args) {
    new SpringApplicationBuilder(WorkerOnlyApplication.class).web(WebApplicationType.NONE).run(args);
    System.out.println("main returned");
  }
}
