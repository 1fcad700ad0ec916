package dev.pgtask;

import java.util.Locale;

/** What a limit ({@link Limits#set}) applies to: the tasks of one tenant, one queue or one kind. */
public enum LimitScope {
  /** The tasks of one tenant (the key is the tenant's name), in every queue. */
  TENANT,
  /** The tasks of one queue (the key is the queue's name), of every kind and tenant. */
  QUEUE,
  /** The tasks of one kind (the key is the kind), in every queue. */
  KIND;

  /** The scope as {@code pgtask.set_limit} names it: {@code tenant}, {@code queue} or {@code kind}. */
  public String sqlName() {
    return name().toLowerCase(Locale.ROOT);
  }

  /** The scope {@code pgtask.flow_limit} and the views name {@code name}. */
  public static LimitScope ofSqlName(String name) {
    return valueOf(name.toUpperCase(Locale.ROOT));
  }
}
