package dev.pgtask;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Declares the kind of a {@link TaskArgs} type once, on the type, where both sides read it: the
 * producer through {@link TaskArgs#kind()} and handler registrations that know only the payload
 * class (such as {@code dev.pgtask.spring.PgTaskHandler} beans) through {@link TaskArgs#kindOf}.
 *
 * <pre>{@code
 * @TaskKind("invoice.send")
 * record SendInvoice(long invoiceId) implements TaskArgs {}
 * }</pre>
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.TYPE)
public @interface TaskKind {

  /** The stable kind string, e.g. {@code "invoice.send"}. */
  String value();
}
