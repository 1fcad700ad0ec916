/**
 * pgtask for Spring Boot 3.5, 4.0 and 4.1: auto-configuration activated by the dependency.
 *
 * <p>The transaction protocol. Producer side: {@link dev.pgtask.PgTask}'s enqueues that are given
 * no connection ask {@link dev.pgtask.CurrentTransaction}, here {@code SpringCurrentTransaction}, for
 * the thread's Spring-managed transaction on the application's {@code DataSource}
 * ({@code DataSourceUtils}); there is one under {@code @Transactional} with any transaction manager
 * that binds a JDBC connection for that data source. Consumer side: while a {@link
 * dev.pgtask.spring.PgTaskHandler} runs, the task's connection (inside the task's transaction, past
 * its savepoint) is bound as that data source's transaction ({@code PgTaskHandlers}), so the
 * application's JDBC code joins the task's transaction instead of committing on its own.
 *
 * <p>Flyway: {@link dev.pgtask.spring.ApplicationFlywayFilter} keeps Boot's own Flyway
 * auto-configuration only for applications that use Flyway themselves.
 *
 * <p>One jar for Spring Boot 3.5 and 4: nothing here uses a type Boot 4 moved except the two health
 * indicators, each registered only when its line's health types are present. See docs/spring-boot.md.
 */
package dev.pgtask.spring;
