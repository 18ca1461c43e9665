// One table row per export task: what the user sees of each status, and the buttons that
// status allows (the server decides again on every call).
"use strict";

import { button, el, formatBytes, formatNumber, timeEl } from "./format.js";

export const ACTIVE = new Set(["PENDING", "RUNNING"]);

/**
 * The state a person reads, finer than the status: a PENDING task that already failed an
 * attempt (or carries the last attempt's error) is waiting for a retry, not queued.
 */
export function stateOf(task) {
  if (task.status === "PENDING") {
    return task.attemptCount > 0 || task.lastError || task.failureMessage ? "retrying" : "queued";
  }
  return task.status.toLowerCase();
}

export const STATE_LABELS = {
  queued: "Queued",
  retrying: "Retrying",
  running: "Running",
  succeeded: "Ready",
  failed: "Failed",
  cancelled: "Cancelled",
  expired: "Expired",
};

/** One sentence for the aria-live region and the row's title. */
export function describe(task) {
  const label = STATE_LABELS[stateOf(task)] || task.status;
  if (task.status === "RUNNING") {
    const total = task.totalRows === null ? "" : ` of ${formatNumber(task.totalRows)}`;
    return `${task.taskName}: ${label}, ${formatNumber(task.processedRows)}${total} rows.`;
  }
  return `${task.taskName}: ${label}.`;
}

function statusCell(task) {
  const state = stateOf(task);
  const cell = el("td", undefined, "status-cell");
  cell.dataset.label = "Status";
  cell.append(el("span", STATE_LABELS[state] || task.status, `status status-${state}`));
  if (state === "retrying") {
    const next = el("div", undefined, "next-attempt");
    next.append(`Attempt ${task.attemptCount + 1} of ${task.maxAttempts} `);
    next.append(timeEl(task.nextRetryAt, "at "));
    cell.append(next);
    const error = task.lastError || task.failureMessage;
    if (error) cell.append(el("div", `Last error: ${error}`, "last-error"));
  } else if (state === "queued" && task.dispatchVersion > 1) {
    cell.append(el("div", "queued again", "note"));
  } else if (state === "failed" || state === "cancelled") {
    if (task.failureMessage) cell.append(el("div", task.failureMessage, "failure"));
  } else if (state === "expired") {
    cell.append(el("div", "The file was deleted when its retention ended.", "note"));
  }
  if (Array.isArray(task.warnings) && task.warnings.length) {
    const list = el("ul", undefined, "warnings");
    list.setAttribute("aria-label", "Warnings");
    for (const warning of task.warnings) list.append(el("li", warning));
    cell.append(list);
  }
  return cell;
}

function progressCell(task) {
  const cell = el("td", undefined, "progress");
  cell.dataset.label = "Progress";
  const done = Number(task.processedRows);
  const total = task.totalRows === null ? null : Number(task.totalRows);
  if (task.status === "PENDING" || (task.status === "RUNNING" && done === 0 && total === null)) {
    cell.append(el("span", task.status === "PENDING" ? "waiting" : "starting", "rows"));
    return cell;
  }
  if (task.status !== "RUNNING" && task.status !== "SUCCEEDED" && done === 0) return cell;
  const bar = el("progress");
  bar.setAttribute("aria-label", `Progress of ${task.taskName}`);
  if (total) {
    bar.max = total;
    bar.value = Math.min(done, total);
  } else if (task.status !== "RUNNING") {
    bar.max = 1;
    bar.value = 1;
  } // else: no total yet, an indeterminate bar
  const of = total === null ? "" : ` / ${formatNumber(task.totalRows)}`;
  cell.append(bar, el("span", ` ${formatNumber(task.processedRows)}${of} rows`, "rows"));
  return cell;
}

function fileCell(task) {
  const cell = el("td", undefined, "file");
  cell.dataset.label = "File";
  if (task.status === "SUCCEEDED" && task.fileName) {
    cell.append(el("div", task.fileName, "file-name"), el("div", formatBytes(task.sizeBytes), "size"));
    if (task.expiresAt) {
      const expiry = el("div", undefined, "expiry");
      expiry.append(timeEl(task.expiresAt, "kept until "));
      cell.append(expiry);
    }
  }
  return cell;
}

function actionsCell(task, actions) {
  const cell = el("td", undefined, "actions");
  cell.dataset.label = "Actions";
  const name = task.taskName;
  if (task.status === "SUCCEEDED") {
    cell.append(button("Download", "download", `Download ${name}`, (e) => actions.download(task, e.currentTarget)));
  }
  if (ACTIVE.has(task.status)) {
    cell.append(button("Cancel", "cancel", `Cancel ${name}`, (e) => actions.cancel(task, e.currentTarget)));
  }
  if (task.status === "FAILED" || task.status === "CANCELLED") {
    cell.append(button("Retry", "retry", `Retry ${name}`, (e) => actions.retry(task, e.currentTarget)));
  }
  cell.append(button("History", "history", `History of ${name}`, (e) => actions.history(task, e.currentTarget)));
  return cell;
}

function textCell(text, className, label) {
  const cell = el("td", text, className);
  cell.dataset.label = label;
  return cell;
}

/** The row of one task; ``actions`` holds the handlers of its buttons. */
export function taskRow(task, actions) {
  const tr = document.createElement("tr");
  tr.dataset.taskId = task.id;
  tr.dataset.status = task.status;
  tr.dataset.state = stateOf(task);
  tr.dataset.version = task.dispatchVersion;
  const name = el("th", undefined, "name");
  name.scope = "row";
  name.append(el("div", task.taskName));
  const requested = el("td", undefined, "requested");
  requested.dataset.label = "Requested";
  requested.append(timeEl(task.requestedAt));
  tr.append(
    name,
    textCell(task.exportType, "type", "Type"),
    textCell(task.requestedBy ?? "", "requester", "Requested by"),
    statusCell(task),
    progressCell(task),
    requested,
    fileCell(task),
    actionsCell(task, actions),
  );
  return tr;
}
