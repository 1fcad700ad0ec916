package dev.pgtask.spring.example;

import dev.pgtask.TaskArgs;
import dev.pgtask.TaskKind;

/** The task: send the confirmation of one order. The kind is declared here, once. */
@TaskKind("order.confirmation")
public record SendConfirmation(long orderId) implements TaskArgs {}
