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
      "dev.pgtask.testing", "dev.pgtask.otel", "dev.pgtask.cli", "dev.pgtask.ops");

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

  static List<String> internalMentions(Class<?> c) {
    return mentions(c, "dev.pgtask.internal.");
  }

  /** Where the public signatures of {@code c} mention a type whose name starts with {@code prefix}. */
  static List<String> mentions(Class<?> c, String prefix) {
    List<String> out = new ArrayList<>();
    String where = c.getName();
    check(out, where + " extends", c.getGenericSuperclass(), prefix);
    for (Type t : c.getGenericInterfaces()) {
      check(out, where + " implements", t, prefix);
    }
    for (TypeVariable<?> v : c.getTypeParameters()) {
      check(out, where + " type parameter", v, prefix);
    }
    if (c.isRecord()) {
      for (RecordComponent rc : c.getRecordComponents()) {
        check(out, where + " component " + rc.getName(), rc.getGenericType(), prefix);
      }
    }
    for (Field f : c.getDeclaredFields()) {
      if (visible(f.getModifiers()) && !f.isSynthetic()) {
        check(out, where + "." + f.getName(), f.getGenericType(), prefix);
      }
    }
    for (Method m : c.getDeclaredMethods()) {
      if (visible(m.getModifiers()) && !m.isSynthetic() && !m.isBridge()) {
        checkExecutable(out, where + "." + m.getName() + "()", m, prefix);
        check(out, where + "." + m.getName() + "() returns", m.getGenericReturnType(), prefix);
      }
    }
    for (Constructor<?> k : c.getDeclaredConstructors()) {
      if (visible(k.getModifiers()) && !k.isSynthetic()) {
        checkExecutable(out, where + ".<init>", k, prefix);
      }
    }
    return out;
  }

  private static void checkExecutable(List<String> out, String where, Executable e, String prefix) {
    for (Type p : e.getGenericParameterTypes()) {
      check(out, where + " parameter", p, prefix);
    }
    for (Type x : e.getGenericExceptionTypes()) {
      check(out, where + " throws", x, prefix);
    }
    for (TypeVariable<?> v : e.getTypeParameters()) {
      check(out, where + " type parameter", v, prefix);
    }
  }

  private static boolean visible(int modifiers) {
    return Modifier.isPublic(modifiers) || Modifier.isProtected(modifiers);
  }

  private static void check(List<String> out, String where, Type t, String prefix) {
    walk(t, new java.util.HashSet<>(), name -> out.add(where + ": " + name), prefix);
  }

  private static void walk(Type t, Set<Type> seen, java.util.function.Consumer<String> found, String prefix) {
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
      walk(p.getRawType(), seen, found, prefix);
      walk(p.getOwnerType(), seen, found, prefix);
      for (Type a : p.getActualTypeArguments()) {
        walk(a, seen, found, prefix);
      }
    } else if (t instanceof GenericArrayType g) {
      walk(g.getGenericComponentType(), seen, found, prefix);
    } else if (t instanceof WildcardType w) {
      for (Type b : w.getUpperBounds()) {
        walk(b, seen, found, prefix);
      }
      for (Type b : w.getLowerBounds()) {
        walk(b, seen, found, prefix);
      }
    } else if (t instanceof TypeVariable<?> v) {
      for (Type b : v.getBounds()) {
        walk(b, seen, found, prefix);
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
