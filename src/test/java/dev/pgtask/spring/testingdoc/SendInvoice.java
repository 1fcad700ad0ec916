package dev.pgtask.spring.testingdoc;

import dev.pgtask.TaskArgs;
import dev.pgtask.TaskKind;

/** The payload of docs/testing.md's Spring example. */
@TaskKind("testingdoc.invoice")
public record SendInvoice(long invoiceId, boolean failFirst) implements TaskArgs {}
