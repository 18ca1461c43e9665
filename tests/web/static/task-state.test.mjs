// What a person reads of a task's state (web/static/task-state.js; README "Download center
// page", the table of what each row shows and which action it offers).
import assert from "node:assert/strict";
import test from "node:test";

import { ACTIVE, progressStep, remedyOf, stateOf } from "../../../web/static/task-state.js";

/** A task as the API answers it (web/schemas.py, Task), with ``changes``.
 * @param {object} changes */
function task(changes) {
  return {
    id: "1",
    taskNo: "T1",
    exportType: "CUSTOMER_LIST",
    taskName: "Customers",
    format: "XLSX",
    status: "PENDING",
    dispatchVersion: 1,
    attemptCount: 0,
    maxAttempts: 3,
    handbackCount: 0,
    processedRows: "0",
    totalRows: null,
    fileName: null,
    sizeBytes: null,
    failureMessage: null,
    failureCode: null,
    failureReason: null,
    remedy: null,
    requestedAt: "2026-12-05T12:00:00Z",
    startedAt: null,
    completedAt: null,
    expiresAt: null,
    nextRetryAt: null,
    requestedBy: "7",
    requesterName: null,
    tenantId: "1",
    appCode: "app",
    parameters: {},
    warnings: [],
    dataWarnings: [],
    lastError: null,
    traceId: null,
    ...changes,
  };
}

/** [what, the task's fields, the state] */
const STATES = [
  ["pending, never tried", { status: "PENDING" }, "queued"],
  ["pending after a failed attempt", { status: "PENDING", attemptCount: 1 }, "retrying"],
  ["pending with the last attempt's error", { status: "PENDING", lastError: "timeout" }, "retrying"],
  ["pending with a failure message", { status: "PENDING", failureMessage: "boom" }, "retrying"],
  ["running", { status: "RUNNING", attemptCount: 1 }, "running"],
  ["succeeded", { status: "SUCCEEDED", attemptCount: 1 }, "succeeded"],
  ["failed", { status: "FAILED", attemptCount: 3 }, "failed"],
  ["cancelled", { status: "CANCELLED" }, "cancelled"],
  ["expired", { status: "EXPIRED" }, "expired"],
];

for (const [what, changes, state] of STATES) {
  test(`stateOf: ${what} is ${state}`, () => {
    assert.equal(stateOf(task(changes)), state);
  });
}

/** [what, the task's fields, what may help] */
const REMEDIES = [
  ["a failure the service says to retry", { status: "FAILED", remedy: "retry" }, "retry"],
  ["a failure the service says to edit", { status: "FAILED", remedy: "edit" }, "edit"],
  ["a failure only support can help", { status: "FAILED", remedy: "support" }, "support"],
  ["a failure without a remedy", { status: "FAILED" }, "retry"],
  ["a cancelled export", { status: "CANCELLED" }, "retry"],
  ["an expired file: export it again", { status: "EXPIRED", remedy: "retry" }, "edit"],
  ["a queued export", { status: "PENDING", remedy: "retry" }, null],
  ["a running export", { status: "RUNNING" }, null],
  ["a file that is ready", { status: "SUCCEEDED" }, null],
];

for (const [what, changes, remedy] of REMEDIES) {
  test(`remedyOf: ${what}`, () => {
    assert.equal(remedyOf(task(changes)), remedy);
  });
}

/** [what, the task's fields, the quarter reached] */
const STEPS = [
  ["not running", { status: "SUCCEEDED", processedRows: "100", totalRows: "100" }, 0],
  ["no total yet", { status: "RUNNING", processedRows: "500", totalRows: null }, 0],
  ["a zero total", { status: "RUNNING", processedRows: "0", totalRows: "0" }, 0],
  ["just under a quarter", { status: "RUNNING", processedRows: "249", totalRows: "1000" }, 0],
  ["a quarter", { status: "RUNNING", processedRows: "250", totalRows: "1000" }, 1],
  ["three quarters", { status: "RUNNING", processedRows: "799", totalRows: "1000" }, 3],
  ["all", { status: "RUNNING", processedRows: "1000", totalRows: "1000" }, 4],
];

for (const [what, changes, step] of STEPS) {
  test(`progressStep: ${what} is ${step}`, () => {
    assert.equal(progressStep(task(changes)), step);
  });
}

test("ACTIVE holds the statuses of unfinished tasks", () => {
  assert.deepEqual([...ACTIVE].sort(), ["PENDING", "RUNNING"]);
});
