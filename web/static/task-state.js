// @ts-check
// What a person reads of a task's state, decided from its JSON alone: the state finer
// than the status, the action that may help, how far a running export has come. Pure: no
// DOM, no state of its own (tests/web/static/task-state.test.mjs runs it in Node);
// tasks.js draws the rows from it.
"use strict";

/** @import { Remedy, Task, TaskStatus } from "./client.js" */

/**
 * @typedef {"queued" | "retrying" | Exclude<Lowercase<TaskStatus>, "pending">} TaskState
 * What the status column says (a page word of i18n.js).
 */

/** Statuses of a task that has not finished: it may be cancelled, the list follows it.
 * @type {ReadonlySet<TaskStatus>} */
export const ACTIVE = new Set(["PENDING", "RUNNING"]);

/**
 * The state a person reads, finer than the status: a PENDING task that already failed an
 * attempt (or carries the last attempt's error) is waiting for a retry, not queued.
 * @param {Task} task
 * @returns {TaskState}
 */
export function stateOf(task) {
  if (task.status === "PENDING") {
    return task.attemptCount > 0 || task.lastError || task.failureMessage ? "retrying" : "queued";
  }
  // The lower-case name of a status other than PENDING, which TypeScript cannot follow.
  return /** @type {TaskState} */ (task.status.toLowerCase());
}

/** What may help a failed, cancelled or expired task: "retry", "edit", "support" (the
 * service decides it: the task's ``remedy``); null for any other task.
 * @param {Task} task
 * @returns {Remedy | null} */
export function remedyOf(task) {
  if (task.status === "EXPIRED") return "edit"; // the file is gone: export it again
  if (task.status !== "FAILED" && task.status !== "CANCELLED") return null;
  return task.remedy || "retry";
}

/** Which quarter of its total a running export has reached (0 to 4; 0 for any other
 * task): a screen reader hears a running export at 25 %, 50 %, 75 %.
 * @param {Task} task
 * @returns {number} */
export function progressStep(task) {
  // The total is a 64-bit count, a string: "0" is true, so test the number.
  const total = Number(task.totalRows);
  if (task.status !== "RUNNING" || !total) return 0;
  return Math.floor((4 * Number(task.processedRows)) / total);
}
