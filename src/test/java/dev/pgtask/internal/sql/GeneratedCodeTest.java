package dev.pgtask.internal.sql;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgtask.testsupport.TestDatabase;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.jooq.codegen.GenerationTool;
import org.jooq.meta.jaxb.Configuration;
import org.jooq.meta.jaxb.Jdbc;
import org.junit.jupiter.api.Test;

/**
 * The committed jOOQ classes must be exactly what jooq-codegen/jooq-codegen.xml generates from a
 * database migrated by the real migrations. With {@code -Dpgtask.jooq.regenerate=true} (see
 * jooq-codegen/regenerate) it rewrites them instead.
 */
class GeneratedCodeTest {

  private static final Path CONFIG = Path.of("jooq-codegen", "jooq-codegen.xml");
  private static final Path COMMITTED = Path.of("src", "main", "java", "dev", "pgtask", "internal", "sql", "gen");

  @Test
  void committedGeneratedCodeMatchesTheMigrations() throws Exception {
    boolean regenerate = Boolean.getBoolean("pgtask.jooq.regenerate");
    Path out = regenerate ? Path.of("src", "main", "java") : Files.createTempDirectory("pgtask-jooq");
    try (TestDatabase db = TestDatabase.create("codegen")) {
      Configuration configuration;
      try (InputStream in = Files.newInputStream(CONFIG)) {
        configuration = GenerationTool.load(in);
      }
      configuration.setJdbc(new Jdbc().withDriver("org.postgresql.Driver").withUrl(db.url())
          .withUser(db.user()).withPassword(db.password()));
      configuration.getGenerator().getTarget().setDirectory(out.toString());
      GenerationTool.generate(configuration);
    }
    if (regenerate) {
      return;
    }
    Path generated = out.resolve(Path.of("dev", "pgtask", "internal", "sql", "gen"));
    assertThat(tree(generated))
        .as("committed jOOQ classes differ from what the migrations produce: run jooq-codegen/regenerate")
        .isEqualTo(tree(COMMITTED));
  }

  private static Map<String, String> tree(Path root) throws IOException {
    Map<String, String> files = new TreeMap<>();
    if (!Files.isDirectory(root)) {
      return files;
    }
    try (Stream<Path> paths = Files.walk(root)) {
      for (Path p : (Iterable<Path>) paths.filter(Files::isRegularFile)::iterator) {
        files.put(root.relativize(p).toString().replace('\\', '/'), Files.readString(p));
      }
    }
    return files;
  }
}
