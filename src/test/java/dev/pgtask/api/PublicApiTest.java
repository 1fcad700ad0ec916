package dev.pgtask.api;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgtask.PgTask;
import java.io.IOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.Executable;
import java.lang.reflect.Field;
import java.lang.reflect.GenericArrayType;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.lang.reflect.TypeVariable;
import java.lang.reflect.WildcardType;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The public API exposes no internal type: no public or protected signature (method, constructor,
 * field, record component, supertype, type bound) of a public class in an exported package
 * mentions a {@code dev.pgtask.internal} type. Reflection over the compiled classes.
 */
class PublicApiTest {

  /** The packages users program against. */
  static final List<String> EXPORTED = List.of("dev.pgtask", "dev.pgtask.micrometer", "dev.pgtask.migrate",
      "dev.pgtask.testing", "dev.pgtask.otel", "dev.pgtask.cli", "dev.pgtask.ops", "dev.pgtask.dashboard");

  @Test
  void noPublicSignatureInAnExportedPackageMentionsAnInternalType() throws Exception {
    List<Class<?>> classes = exportedClasses();
    assertThat(classes).as("public classes found in the exported packages")
        .extracting(Class::getName).contains("dev.pgtask.PgTask", "dev.pgtask.PgTaskWorker",
            "dev.pgtask.migrate.Migrations", "dev.pgtask.micrometer.MicrometerMetrics");
    Set<String> leaks = new TreeSet<>();
    for (Class<?> c : classes) {
      leaks.addAll(internalMentions(c));
    }
    assertThat(leaks).as("public signatures that mention dev.pgtask.internal types").isEmpty();
  }

  @Test
  void theOperatorReadsExposeNoJooqType() throws Exception {
    List<Class<?>> ops = exportedClasses().stream().filter(c -> c.getPackageName().equals("dev.pgtask.ops")).toList();
    assertThat(ops).as("public classes of dev.pgtask.ops").extracting(Class::getSimpleName)
        .contains("PgTaskOperations", "QueueSummary", "Health", "Unrunnable", "RunningTask", "LiveWorker", "TenantLock");
    Set<String> leaks = new TreeSet<>();
    for (Class<?> c : ops) {
      leaks.addAll(mentions(c, "org.jooq."));
    }
    assertThat(leaks).as("public signatures of dev.pgtask.ops that mention jOOQ types").isEmpty();
  }

  @Test
  void theDashboardsPublicTypesAreItsEntryPointsAndMentionNoServletSpringOrJooqType() throws Exception {
    List<Class<?>> dashboard = exportedClasses().stream()
        .filter(c -> c.getPackageName().equals("dev.pgtask.dashboard")).toList();
    assertThat(dashboard).as("public classes of dev.pgtask.dashboard").extracting(Class::getSimpleName)
        .containsExactlyInAnyOrder("Dashboard", "Builder", "DashboardServer", "DashboardAccess",
            "DashboardAction", "DashboardRequest", "DashboardResponse");
    Set<String> leaks = new TreeSet<>();
    for (Class<?> c : dashboard) {
      for (String prefix : List.of("org.jooq.", "org.springframework.", "jakarta.")) {
        leaks.addAll(mentions(c, prefix));
      }
    }
    assertThat(leaks).as("the core needs no servlet container, Spring or jOOQ of its users").isEmpty();
  }

  @Test
  void theCheckFindsAnInternalTypeInAPublicSignature() {
    assertThat(internalMentions(Leaky.class)).as("the check itself: a public method returning an internal type")
        .anySatisfy(s -> assertThat(s).contains("leak()").contains("dev.pgtask.internal.WorkerConfig"));
  }

  /** A public class with an internal type in a public signature: what the check must catch. */
  public static final class Leaky {
    public dev.pgtask.internal.WorkerConfig leak() {
      return null;
    }
  }

  @Test
  void noEnqueueOrOtherClientSignatureMentionsAJooqTypeOnlyTheHandlersDslDoes() throws Exception {
    // pgtask's jOOQ version stays pgtask's: a jOOQ user enqueues through the transaction's Connection
    // (docs/migration.md); the one jOOQ type left is TaskContext.dsl(), the handler's convenience
    // (the command line's own classes are not a library API: the CLI is an application)
    Set<String> jooq = new TreeSet<>();
    for (Class<?> c : exportedClasses()) {
      if (!c.getPackageName().equals("dev.pgtask.cli")) {
        jooq.addAll(mentions(c, "org.jooq."));
      }
    }
    assertThat(jooq).as("public signatures that mention jOOQ types")
        .containsExactly("dev.pgtask.TaskContext.dsl() returns: org.jooq.DSLContext");
  }

  static List<String> internalMentions(Class<?> c) {
    return mentions(c, "dev.pgtask.internal.");
  }

  /** Every public or protected signature of {@code c} that mentions a type whose name starts with {@code prefix}. */
  static List<String> mentions(Class<?> c, String prefix) {
    List<String> out = new ArrayList<>();
    String where = c.getName();
    check(out, prefix, where + " extends", c.getGenericSuperclass());
    for (Type t : c.getGenericInterfaces()) {
      check(out, prefix, where + " implements", t);
    }
    for (TypeVariable<?> v : c.getTypeParameters()) {
      check(out, prefix, where + " type parameter", v);
    }
    if (c.isRecord()) {
      for (RecordComponent rc : c.getRecordComponents()) {
        check(out, prefix, where + " component " + rc.getName(), rc.getGenericType());
      }
    }
    for (Field f : c.getDeclaredFields()) {
      if (visible(f.getModifiers()) && !f.isSynthetic()) {
        check(out, prefix, where + "." + f.getName(), f.getGenericType());
      }
    }
    for (Method m : c.getDeclaredMethods()) {
      if (visible(m.getModifiers()) && !m.isSynthetic() && !m.isBridge()) {
        checkExecutable(out, prefix, where + "." + m.getName() + "()", m);
        check(out, prefix, where + "." + m.getName() + "() returns", m.getGenericReturnType());
      }
    }
    for (Constructor<?> k : c.getDeclaredConstructors()) {
      if (visible(k.getModifiers()) && !k.isSynthetic()) {
        checkExecutable(out, prefix, where + ".<init>", k);
      }
    }
    return out;
  }

  private static void checkExecutable(List<String> out, String prefix, String where, Executable e) {
    for (Type p : e.getGenericParameterTypes()) {
      check(out, prefix, where + " parameter", p);
    }
    for (Type x : e.getGenericExceptionTypes()) {
      check(out, prefix, where + " throws", x);
    }
    for (TypeVariable<?> v : e.getTypeParameters()) {
      check(out, prefix, where + " type parameter", v);
    }
  }

  private static boolean visible(int modifiers) {
    return Modifier.isPublic(modifiers) || Modifier.isProtected(modifiers);
  }

  private static void check(List<String> out, String prefix, String where, Type t) {
    walk(t, prefix, new java.util.HashSet<>(), name -> out.add(where + ": " + name));
  }

  private static void walk(Type t, String prefix, Set<Type> seen, java.util.function.Consumer<String> found) {
    if (t == null || !seen.add(t)) {
      return;
    }
    if (t instanceof Class<?> c) {
      while (c.isArray()) {
        c = c.getComponentType();
      }
      if (c.getName().startsWith(prefix)) {
        found.accept(c.getName());
      }
    } else if (t instanceof ParameterizedType p) {
      walk(p.getRawType(), prefix, seen, found);
      walk(p.getOwnerType(), prefix, seen, found);
      for (Type a : p.getActualTypeArguments()) {
        walk(a, prefix, seen, found);
      }
    } else if (t instanceof GenericArrayType g) {
      walk(g.getGenericComponentType(), prefix, seen, found);
    } else if (t instanceof WildcardType w) {
      for (Type b : w.getUpperBounds()) {
        walk(b, prefix, seen, found);
      }
      for (Type b : w.getLowerBounds()) {
        walk(b, prefix, seen, found);
      }
    } else if (t instanceof TypeVariable<?> v) {
      for (Type b : v.getBounds()) {
        walk(b, prefix, seen, found);
      }
    }
  }

  /** Every public class (and public nested class of one) in the exported packages, from the compiled classes. */
  static List<Class<?>> exportedClasses() throws IOException, URISyntaxException, ClassNotFoundException {
    Path root = Path.of(PgTask.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    List<Class<?>> out = new ArrayList<>();
    for (String pkg : EXPORTED) {
      Path dir = root.resolve(pkg.replace('.', '/'));
      if (!Files.isDirectory(dir)) {
        continue;
      }
      try (Stream<Path> files = Files.list(dir)) {
        for (Path f : files.filter(p -> p.toString().endsWith(".class")).sorted().toList()) {
          String simple = f.getFileName().toString().replace(".class", "");
          Class<?> c = Class.forName(pkg + "." + simple,
              false, PublicApiTest.class.getClassLoader());
          if (isExported(c)) {
            out.add(c);
          }
        }
      }
    }
    return out;
  }

  private static boolean isExported(Class<?> c) {
    for (Class<?> k = c; k != null; k = k.getDeclaringClass()) {
      if (!Modifier.isPublic(k.getModifiers()) || k.isAnonymousClass() || k.isLocalClass() || k.isSynthetic()) {
        return false;
      }
    }
    return true;
  }
}
