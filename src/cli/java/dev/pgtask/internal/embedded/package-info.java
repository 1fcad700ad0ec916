/**
 * An embedded, real PostgreSQL for the CLI's demo and the test suite when no server is configured:
 * the zonky binaries (optional dependencies: the CLI jar carries them, library users do not inherit
 * them) unpacked once, a data directory per server, {@code initdb}/{@code pg_ctl} run as an
 * unprivileged OS user when the process is root, stopped and deleted at close or JVM exit.
 */
package dev.pgtask.internal.embedded;
