// @ts-check
// The history drawer: a task's events (GET .../export-tasks/{id}/events), oldest first, in
// a modal <dialog> (it keeps keyboard focus inside, closes on Escape, and focus goes back
// to the History button that opened it). Each event reads in plain words from the
// service's catalogue; its technical fields are folded under "Details". While open it
// follows the task: a change of its status, version or attempt (from the progress stream or
// a list refresh) reloads them.
"use strict";

import { messageOf, taskEvents } from "./client.js";
import { $, el } from "./dom.js";
import {
  eventWords,
  failureWords,
  formatBytes,
  formatDuration,
  formatNumber,
  t,
  timeEl,
} from "./i18n.js";

/** @import { Task, TaskEvent } from "./client.js" */

/** The drawer's dialog. */
const drawerDialog = () => $("drawer", HTMLDialogElement);

/** The event's one line for people, or "" when its label says it all.
 * @param {TaskEvent} event
 * @returns {string} */
function summary(event) {
  const d = event.detail || {};
  switch (event.kind) {
    case "attempt_failed":
      return failureWords(d.code) || d.message || "";
    case "succeeded":
      return [
        t("eventRows", { rows: formatNumber(d.rows), size: formatBytes(d.bytes) }),
        d.seconds === undefined ? "" : t("eventTook", { time: formatDuration(d.seconds) }),
      ].filter(Boolean).join(" ");
    case "claimed":
      return d.attempt ? t("eventAttempt", { attempt: d.attempt }) : "";
    case "created":
    case "cancelled":
    case "downloaded":
      if (!d.by) return "";
      return t("by", { who: String(d.by) === viewer ? t("you") : t("user", { id: d.by }) });
    default:
      return "";
  }
}

/** The event's fields as they are, folded under "Technical details"; null without any.
 * @param {TaskEvent} event */
function technical(event) {
  const detail = event.detail || {};
  const keys = Object.keys(detail);
  if (!keys.length) return null;
  const box = el("details", undefined, "more");
  box.append(el("summary", t("technicalDetails")));
  const list = el("dl");
  for (const key of keys) {
    const value = detail[key];
    const dd = el("dd");
    if (key === "at") dd.append(timeEl(String(value)));
    else dd.textContent = typeof value === "object" ? JSON.stringify(value) : String(value);
    list.append(el("dt", key), dd);
  }
  box.append(list);
  return box;
}

/** @param {TaskEvent} event */
function eventItem(event) {
  const item = el("li", undefined, `event event-${event.kind}`);
  item.dataset.kind = event.kind;
  const head = el("div", undefined, "event-head");
  const manual = event.kind === "retry_scheduled" && event.detail && event.detail.manual;
  head.append(el("strong", eventWords(manual ? "retry_requested" : event.kind)), " ", timeEl(event.at));
  item.append(head);
  const line = summary(event);
  if (line) item.append(el("p", line, "event-summary"));
  if (event.kind === "retry_scheduled" && !manual && event.detail && event.detail.at) {
    const next = el("p", undefined, "event-summary");
    next.append(timeEl(String(event.detail.at), "eventRetryAt"));
    item.append(next);
  }
  const more = technical(event);
  if (more) item.append(more);
  return item;
}

/** The button that opened the drawer: it gets the focus back on close.
 * @type {HTMLElement | null} */
let opener = null;
// The signed-in user's id: their own actions read "by you".
let viewer = "";

/** Who reads the history (their own actions read "by you").
 * @param {string} userId */
export function setViewer(userId) {
  viewer = userId ? String(userId) : "";
}

// The task whose history is shown (null while closed), and the number of the newest load:
// an older answer arriving late never replaces a newer one.
/** @type {Task | null} */
let shownTask = null;
let loads = 0;

/** Load ``task``'s events into the list; ``quiet``: without "Loading…" first.
 * @param {Task} task
 * @param {boolean} quiet */
async function loadEvents(task, quiet) {
  const list = $("events");
  const load = ++loads;
  if (!quiet) list.replaceChildren(el("li", t("loading"), "loading"));
  list.setAttribute("aria-busy", "true");
  try {
    const data = await taskEvents(task.id);
    if (load !== loads) return;
    const items = data.items.map(eventItem);
    if (data.truncated) items.unshift(el("li", t("olderEvents"), "note"));
    if (!items.length) items.push(el("li", t("noEvents"), "note"));
    list.replaceChildren(...items);
  } catch (error) {
    if (load === loads) list.replaceChildren(el("li", messageOf(error), "failure"));
  } finally {
    if (load === loads) list.removeAttribute("aria-busy");
  }
}

/** Open the drawer on ``task``'s history; ``from`` gets the focus back on close.
 * @param {Task} task
 * @param {HTMLElement | null} [from] */
export async function openHistory(task, from) {
  const drawer = drawerDialog();
  opener = from || null;
  shownTask = task;
  // The task number and trace id are what a person quotes when reporting a problem.
  const parts = [task.taskName, `${t("taskNumber")} ${task.taskNo || task.id}`];
  if (task.traceId) parts.push(`${t("traceId")} ${task.traceId}`);
  $("drawer-task").textContent = parts.join(" · ");
  if (!drawer.open) drawer.showModal();
  $("drawer-close").focus();
  await loadEvents(task, false);
}

/** ``task`` changed (the progress stream or a list refresh): while the drawer shows its
 * history and the change is one that writes an event (a new status, version or attempt,
 * not mere progress), load its events again, keeping the focus where it is.
 * @param {Task} task */
export function historyTaskChanged(task) {
  if (!shownTask || shownTask.id !== task.id || !drawerDialog().open) return;
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

/** Close the drawer if it is open (sign-out). */
export function closeHistory() {
  const drawer = drawerDialog();
  if (drawer.open) drawer.close();
}

/** Name the list of events in the page's current language. */
export function rewordDrawer() {
  $("events").setAttribute("aria-label", t("historyHeading"));
}

/** Wire the drawer: its Close button and a click on its backdrop close it; closed, it
 * gives the focus back to the button that opened it. */
export function setUpDrawer() {
  const drawer = drawerDialog();
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
