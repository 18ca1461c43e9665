// @ts-check
// One table row per export task (a card at a phone's width): what a person sees of each
// state (task-state.js decides it), in their language, and the one action that helps (the
// server decides again on every call). Failures are told in the service's words (its
// catalogue, by failureCode); the technical message, the task number and the trace id are
// folded under "Details".
"use strict";

import { button, el } from "./dom.js";
import {
  causeWords,
  exactTime,
  failureWords,
  formatBytes,
  formatDuration,
  formatNumber,
  t,
  timeEl,
  warningWords,
} from "./i18n.js";
import { ACTIVE, remedyOf, stateOf } from "./task-state.js";

/** @import { Task } from "./client.js" */

/**
 * @typedef {object} Actions  The handlers of a row's buttons (download-center.js); each
 *   gets the task and the button.
 * @property {(task: Task, button: HTMLButtonElement) => unknown} download
 * @property {(task: Task, button: HTMLButtonElement) => unknown} cancel
 * @property {(task: Task, button: HTMLButtonElement) => unknown} retry
 * @property {(task: Task, button: HTMLButtonElement) => unknown} edit
 * @property {(task: Task, button: HTMLButtonElement) => unknown} history
 * @property {((userId: string) => void) | null} only  Show only a requester's exports (an
 *   administrator's; null for anyone else).
 */
/** @typedef {"download" | "cancel" | "retry" | "edit" | "again" | "history"} ActionWord */

/** The failure in plain words: the catalogue's in the page's language, else the
 * service's English reason.
 * @param {Task} task */
function reasonOf(task) {
  return failureWords(task.failureCode) || task.failureReason || task.failureMessage || "";
}

/** One sentence for the aria-live region.
 * @param {Task} task */
export function describe(task) {
  let state = t(stateOf(task));
  if (task.status === "RUNNING" && task.totalRows !== null) {
    const percent = Math.floor((100 * Number(task.processedRows)) / Math.max(1, Number(task.totalRows)));
    state = `${state} ${t("percent", { percent })}`;
  }
  return t("announce", { name: task.taskName, state });
}

/** Technical details a person quotes to support: the message, task number and trace id.
 * @param {Task} task
 * @param {string | null} message */
function details(task, message) {
  const box = el("details", undefined, "more");
  box.append(el("summary", t("details")));
  const list = el("dl");
  /** @param {string} label @param {string | null} value @param {string} className */
  const add = (label, value, className) => {
    if (!value) return;
    list.append(el("dt", label), el("dd", value, className));
  };
  add(t("technical"), message, "failure");
  add(t("taskNumber"), task.taskNo || task.id, "task-no");
  add(t("traceId"), task.traceId, "trace");
  box.append(list, el("p", t("quote"), "note"));
  return box;
}

/** The data warnings of a finished export, folded; null without any.
 * @param {Task} task */
function notes(task) {
  const warnings = Array.isArray(task.dataWarnings) ? task.dataWarnings : [];
  if (!warnings.length) return null;
  const box = el("details", undefined, "notes");
  const kinds = [...new Set(warnings.map((w) => w.kind))];
  box.append(el("summary", kinds.map(warningWords).join(" ")));
  // The service's own lines are English: folded one level further, marked as English, so
  // the note a person reads is in one language.
  const technical = el("details", undefined, "technical");
  technical.append(el("summary", t("technicalDetails")));
  const list = el("ul");
  list.lang = "en";
  list.setAttribute("aria-label", t("warningsOf"));
  for (const warning of warnings) list.append(el("li", warning.detail));
  technical.append(list);
  box.append(technical);
  return box;
}

/** @param {Task} task */
function attemptText(task) {
  return t("attempt", { attempt: Math.max(1, task.attemptCount), max: task.maxAttempts });
}

/** @param {Task} task */
function statusCell(task) {
  const state = stateOf(task);
  const cell = el("td", undefined, "status-cell");
  cell.dataset.label = t("colStatus");
  cell.append(el("span", t(state), `status status-${state}`));
  if (state === "retrying") {
    const next = el("div", undefined, "next-attempt");
    next.append(t("attempt", { attempt: task.attemptCount + 1, max: task.maxAttempts }), " ");
    next.append(timeEl(task.nextRetryAt, "", true));
    cell.append(next);
    // What happened, not what to do: the service is trying again by itself.
    const cause = causeWords(task.failureCode) || reasonOf(task);
    cell.append(el("div", t("lastError", { reason: cause }), "last-error"));
    cell.append(details(task, task.lastError || task.failureMessage));
  } else if (state === "queued" && task.dispatchVersion > 1) {
    cell.append(el("div", `${t("queuedAgain")} · ${attemptText(task)}`, "note restarted"));
  } else if (state === "running" && (task.attemptCount > 1 || task.dispatchVersion > 1)) {
    cell.append(el("div", attemptText(task), "note restarted"));
  } else if (state === "failed" || state === "cancelled") {
    cell.append(el("div", reasonOf(task), "reason"));
    cell.append(details(task, task.failureMessage));
  } else if (state === "expired") {
    cell.append(el("div", t("fileGone"), "note"));
  } else if (state === "succeeded" && Number(task.processedRows) === 0) {
    cell.append(el("div", t("noRows"), "no-rows note"));
  }
  const warned = state === "succeeded" ? notes(task) : null;
  if (warned) cell.append(warned);
  return cell;
}

/** Rows per second since the run started, or null before there is a rate to show.
 * @param {Task} task
 * @param {number} now  Milliseconds since the epoch. */
function rateOf(task, now) {
  if (!task.startedAt) return null;
  const seconds = (now - new Date(task.startedAt).getTime()) / 1000;
  const done = Number(task.processedRows);
  return seconds >= 1 && done > 0 ? done / seconds : null;
}

/** @param {Task} task
 * @param {number} now  Milliseconds since the epoch. */
function progressCell(task, now) {
  const cell = el("td", undefined, "progress");
  cell.dataset.label = t("colProgress");
  const done = Number(task.processedRows);
  const total = task.totalRows === null ? null : Number(task.totalRows);
  if (task.status === "PENDING") {
    // A retry waits for its time (the status says when), not for a worker.
    if (stateOf(task) === "queued") cell.append(el("span", t("waiting"), "rows"));
    return cell;
  }
  if (task.status === "SUCCEEDED") {
    cell.append(el("span", t("rowsDone", { done: formatNumber(done) }), "rows"));
    return cell;
  }
  if (task.status !== "RUNNING") return cell; // no half bar on a stopped export
  if (done === 0 && total === null) {
    cell.append(el("span", t("starting"), "rows"));
    return cell;
  }
  const bar = el("progress");
  bar.setAttribute("aria-label", t("progressOf", { name: task.taskName }));
  if (total) {
    bar.max = total;
    bar.value = Math.min(done, total);
  } // else: no total yet, an indeterminate bar
  const line = el("div", undefined, "rows");
  const count = total === null
    ? t("rowsDone", { done: formatNumber(done) })
    : t("rowsOf", { done: formatNumber(done), total: formatNumber(total) });
  const parts = [count];
  if (total) parts.unshift(t("percent", { percent: Math.floor((100 * Math.min(done, total)) / total) }));
  line.textContent = parts.join(" · ");
  cell.append(bar, line);
  const rate = rateOf(task, now);
  if (rate) {
    const speed = [t("rate", { rate: formatNumber(Math.round(rate)) })];
    const left = total && total > done ? (total - done) / rate : 0;
    if (left >= 1) speed.push(t("left", { time: formatDuration(left) }));
    cell.append(el("div", speed.join(" · "), "rate"));
  }
  return cell;
}

/** @param {Task} task */
function requestedCell(task) {
  const cell = el("td", undefined, "requested");
  cell.dataset.label = t("colRequested");
  cell.append(timeEl(task.requestedAt));
  // The exact time as text too: a hover title alone is out of reach on a phone.
  cell.append(el("span", exactTime(task.requestedAt), "exact"));
  if (task.status === "SUCCEEDED" && task.startedAt && task.completedAt) {
    const seconds = (new Date(task.completedAt).getTime() - new Date(task.startedAt).getTime()) / 1000;
    const took = seconds < 1 ? t("tookUnderSecond") : t("took", { time: formatDuration(seconds) });
    cell.append(el("div", took, "duration"));
  }
  return cell;
}

/** A file name that may wrap only after its separators, never mid-word.
 * @param {string} name */
function fileNameEl(name) {
  const node = el("div", undefined, "file-name");
  for (const part of name.split(/(?<=[._\-\s])/)) {
    node.append(part, document.createElement("wbr"));
  }
  return node;
}

/** @param {Task} task */
function fileCell(task) {
  const cell = el("td", undefined, "file");
  cell.dataset.label = t("colFile");
  if (task.status === "SUCCEEDED" && task.fileName) {
    cell.append(fileNameEl(task.fileName), el("div", formatBytes(task.sizeBytes), "size"));
    if (task.expiresAt) {
      const expiry = el("div", undefined, "expiry");
      expiry.append(timeEl(task.expiresAt, "expires"));
      cell.append(expiry);
    }
  }
  return cell;
}

/** @param {Task} task
 * @param {Actions} actions */
function actionsCell(task, actions) {
  const cell = el("td", undefined, "actions");
  cell.dataset.label = t("colActions");
  const name = task.taskName;
  /** @param {ActionWord} key
   * @param {string} className
   * @param {(task: Task, button: HTMLButtonElement) => unknown} handler */
  const add = (key, className, handler) => {
    const node = button(t(key), className, t(`${key}Of`, { name }), () => handler(task, node));
    cell.append(node);
  };
  if (task.status === "SUCCEEDED") add("download", "download primary", actions.download);
  if (ACTIVE.has(task.status)) add("cancel", "cancel", actions.cancel);
  const remedy = remedyOf(task);
  if (remedy === "retry") add("retry", "retry primary", actions.retry);
  // An expired file is exported again as it was; a refused one is edited first.
  if (remedy === "edit") add(task.status === "EXPIRED" ? "again" : "edit", "edit primary", actions.edit);
  add("history", "history", actions.history);
  return cell;
}

/** Move the keyboard focus to the button of ``tr`` like ``like`` (same class), or to its
 * History button when that one is gone (a Cancel button once the export is cancelled).
 * @param {HTMLElement} tr
 * @param {Element} like */
export function refocus(tr, like) {
  const name = like.classList[0];
  const again = (name && tr.querySelector(`button.${name}`)) || tr.querySelector("button.history");
  if (again instanceof HTMLElement) again.focus();
}

/** Put ``tr`` in place of ``old``; the focus stays in the row.
 * @param {HTMLElement} old
 * @param {HTMLElement} tr */
export function replaceRow(old, tr) {
  const focused = old.contains(document.activeElement) ? document.activeElement : null;
  old.replaceWith(tr);
  if (focused) refocus(tr, focused);
}

/** The row of one task; ``actions`` holds the handlers of its buttons, ``typeName`` gives
 * an export type's display name in the page's language.
 * @param {Task} task
 * @param {Actions} actions
 * @param {(exportType: string) => string} typeName
 * @param {number} [now]  Milliseconds since the epoch.
 * @returns {HTMLTableRowElement} */
export function taskRow(task, actions, typeName, now = Date.now()) {
  const tr = document.createElement("tr");
  tr.dataset.taskId = task.id;
  tr.dataset.status = task.status;
  tr.dataset.state = stateOf(task);
  tr.dataset.version = String(task.dispatchVersion);
  const name = el("th", undefined, "name");
  name.scope = "row";
  name.append(el("div", task.taskName, "task-name"), el("div", typeName(task.exportType), "type"));
  // The name the requester's token carried (the id when it carried none); choosing it
  // shows only that person's exports.
  const requester = el("td", undefined, "requester");
  requester.dataset.label = t("colRequester");
  const who = task.requesterName || t("user", { id: task.requestedBy });
  const only = actions.only;
  if (only) {
    requester.append(button(who, "by link", t("onlyBy", { name: who }), () => only(task.requestedBy)));
  } else {
    requester.textContent = who;
  }
  tr.append(
    name,
    requester,
    statusCell(task),
    progressCell(task, now),
    requestedCell(task),
    fileCell(task),
    actionsCell(task, actions),
  );
  return tr;
}
