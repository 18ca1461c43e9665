// The history drawer: a task's events (GET .../export-tasks/{id}/events), oldest first, in
// a modal <dialog> (it keeps keyboard focus inside, closes on Escape, and focus goes back
// to the History button that opened it).
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

/** Open the drawer on ``task``'s history; ``from`` gets the focus back on close. */
export async function openHistory(task, from) {
  const drawer = $("drawer");
  opener = from || null;
  $("drawer-task").textContent = `${task.taskName} (${task.exportType}, ${task.taskNo || task.id})`;
  const list = $("events");
  list.replaceChildren(el("li", "Loading…", "loading"));
  list.setAttribute("aria-busy", "true");
  if (!drawer.open) drawer.showModal();
  $("drawer-close").focus();
  try {
    const data = await api(`${TASKS}/${task.id}/events`);
    const items = data.items.map(eventItem);
    if (data.truncated) items.unshift(el("li", "Older events are not shown.", "note"));
    if (!items.length) items.push(el("li", "No events recorded.", "note"));
    list.replaceChildren(...items);
  } catch (error) {
    list.replaceChildren(el("li", error.message, "failure"));
  } finally {
    list.removeAttribute("aria-busy");
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
    if (opener && opener.isConnected) opener.focus();
    opener = null;
  });
}
