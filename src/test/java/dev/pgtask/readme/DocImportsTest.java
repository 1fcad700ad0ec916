package dev.pgtask.readme;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The README's and docs' Java snippets come with their imports, and every import names a class that
 * exists (pgtask's, the JDK's, or a dependency's), so a copied snippet compiles.
 */
class DocImportsTest {

  private static final Pattern JAVA_BLOCK = Pattern.compile("```java\\n(.*?)```", Pattern.DOTALL);
  private static final Pattern IMPORT = Pattern.compile("^import (static )?([\\w.]+?)(\\.\\w+)?;$", Pattern.MULTILINE);

  @Test
  void everyImportInTheDocsSnippetsNamesAClassThatExists() throws Exception {
    List<Path> pages = new ArrayList<>(List.of(Path.of("README.md")));
    try (Stream<Path> docs = Files.list(Path.of("docs"))) {
      docs.filter(p -> p.toString().endsWith(".md")).forEach(pages::add);
    }
    List<String> imports = new ArrayList<>();
    List<String> missing = new ArrayList<>();
    for (Path page : pages) {
      Matcher block = JAVA_BLOCK.matcher(Files.readString(page));
      while (block.find()) {
        Matcher m = IMPORT.matcher(block.group(1));
        while (m.find()) {
          String name = m.group(1) != null ? m.group(2) : m.group(2) + (m.group(3) == null ? "" : m.group(3));
          imports.add(name);
          try {
            Class.forName(name, false, getClass().getClassLoader());
          } catch (ClassNotFoundException e) {
            missing.add(page + ": " + name);
          }
        }
      }
    }
    assertThat(imports).as("imports in the snippets").contains("dev.pgtask.PgTask", "dev.pgtask.PgTaskWorker",
        "dev.pgtask.testing.PgTaskTester", "dev.pgtask.otel.OpenTelemetryTracing");
    assertThat(missing).as("imports of classes that do not exist").isEmpty();
  }
}
