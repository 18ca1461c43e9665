// The history drawer: a task's events (GET .../export-tasks/{id}/events), oldest first, in
// a modal <dialog> (it keeps keyboard focus inside, closes on Escape, and focus goes back
// to the History button that opened it). While open it follows the task: a change of its
// status, version or attempt (from the progress stream or a list refresh) reloads them.
"use strict";

import { api, TASKS } from "./api.js";
import { $, el, formatBytes, formatNumber, timeEl } from "./format.js";

const KIND_LABELS = {
  created: "Created",
  dispatched: "Sent to the workers",
  claimed: "Started",
  attempt_failed: "Attempt failed",
  retry_scheduled: "Retry scheduled",
  handed_back: "Handed back",
  lease_recovered: "Recovered from a lost worker",
  cancelled: "Cancelled",
  succeeded: "File ready",
  downloaded: "Downloaded",
  expired: "Expired",
  quarantined: "Quarantined",
};

// Detail keys shown, in this order, with their labels; other keys follow as they come.
const DETAIL_LABELS = {
  by: "by user",
  exportType: "type",
  instance: "instance",
  version: "version",
  nextVersion: "next version",
  attempt: "attempt",
  cause: "cause",
  inARow: "in a row",
  counted: "counted as an attempt",
  errorClass: "error",
  message: "message",
  at: "at",
  manual: "manual",
  rows: "rows",
  bytes: "size",
  seconds: "seconds",
  reason: "reason",
  final: "final",
  eventId: "command",
};

function detailValue(key, value) {
  if (key === "at") return timeEl(String(value));
  if (key === "bytes") return formatBytes(value);
  if (key === "rows") return formatNumber(value);
  if (typeof value === "boolean") return value ? "yes" : "no";
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}

function eventItem(event) {
  const item = el("li", undefined, `event event-${event.kind}`);
  item.dataset.kind = event.kind;
  const head = el("div", undefined, "event-head");
  head.append(el("strong", KIND_LABELS[event.kind] || event.kind), " ", timeEl(event.at));
  item.append(head);
  const detail = event.detail || {};
  const keys = Object.keys(DETAIL_LABELS).filter((k) => k in detail);
  keys.push(...Object.keys(detail).filter((k) => !(k in DETAIL_LABELS)));
  if (keys.length) {
    const list = el("dl");
    for (const key of keys) {
      const value = el("dd");
      value.append(detailValue(key, detail[key]));
      list.append(el("dt", DETAIL_LABELS[key] || key), value);
    }
    item.append(list);
  }
  return item;
}

let opener = null;
// The task whose history is shown (null while closed), and the number of the newest load:
// an older answer arriving late never replaces a newer one.
let shownTask = null;
let loads = 0;

async function loadEvents(task, quiet) {
  const list = $("events");
  const load = ++loads;
  if (!quiet) list.replaceChildren(el("li", "Loading…", "loading"));
  list.setAttribute("aria-busy", "true");
  try {
    const data = await api(`${TASKS}/${task.id}/events`);
    if (load !== loads) return;
    const items = data.items.map(eventItem);
    if (data.truncated) items.unshift(el("li", "Older events are not shown.", "note"));
    if (!items.length) items.push(el("li", "No events recorded.", "note"));
    list.replaceChildren(...items);
  } catch (error) {
    if (load === loads) list.replaceChildren(el("li", error.message, "failure"));
  } finally {
    if (load === loads) list.removeAttribute("aria-busy");
  }
}

/** Open the drawer on ``task``'s history; ``from`` gets the focus back on close. */
export async function openHistory(task, from) {
  const drawer = $("drawer");
  opener = from || null;
  shownTask = task;
  // The trace id is what a person quotes when reporting a problem (its runs' log lines).
  const trace = task.traceId ? `. Trace id ${task.traceId}` : "";
  $("drawer-task").textContent = `${task.taskName} (${task.exportType}, ${task.taskNo || task.id})${trace}`;
  if (!drawer.open) drawer.showModal();
  $("drawer-close").focus();
  await loadEvents(task, false);
}

/** ``task`` changed (the progress stream or a list refresh): while the drawer shows its
 * history and the change is one that writes an event (a new status, version or attempt,
 * not mere progress), load its events again, keeping the focus where it is. */
export function historyTaskChanged(task) {
  if (!shownTask || shownTask.id !== task.id || !$("drawer").open) return;
  const before = shownTask;
  shownTask = task;
  if (
    before.status !== task.status ||
    before.dispatchVersion !== task.dispatchVersion ||
    before.attemptCount !== task.attemptCount
  ) {
    loadEvents(task, true);
  }
}

export function setUpDrawer() {
  const drawer = $("drawer");
  $("drawer-close").addEventListener("click", () => drawer.close());
  // A click on the backdrop (the dialog element itself, outside its panel) closes it.
  drawer.addEventListener("click", (event) => {
    if (event.target === drawer) drawer.close();
  });
  drawer.addEventListener("close", () => {
    shownTask = null;
    if (opener && opener.isConnected) opener.focus();
    opener = null;
  });
}
