// @ts-check
// Telling a person that an export finished while they looked elsewhere. While the page is
// hidden (another tab, a locked phone), the tab's title counts the exports that finished
// meanwhile — "(2) Export Center — downloads" — and goes back to the plain title when the
// page is seen again. Once the person has said yes (the "Notify me when an export
// finishes" button, shown while the browser has not asked them yet), each one also raises
// a browser notification, in the page's language, that brings the page forward and its
// row into view when clicked. Nothing is asked of the browser before that button.
"use strict";

import { $ } from "./dom.js";
import { t } from "./i18n.js";

/** @import { Task } from "./client.js" */

/** Exports finished while the page was hidden. */
let unseen = 0;
/** Bring the row of a task into view (download-center.js's spotlight). */
let showRow = /** @type {(taskId: string) => void} */ (() => {});

/** Whether this browser has notifications at all (not every phone browser does). */
const canNotify = () => typeof Notification === "function";

/** The tab's title: the page's, with the count of unseen finished exports before it. */
export function retitle() {
  const plain = t("pageTitle");
  document.title = unseen > 0 ? `(${unseen}) ${plain}` : plain;
}

/** Show the opt-in button only while the browser can still ask the person. */
function offer() {
  $("notify").hidden = !canNotify() || Notification.permission !== "default";
}

/** ``task`` left the active states: when it ended READY or FAILED while the page is
 * hidden, count it and notify (a stop is the person's own doing, or an administrator's).
 * @param {Task} task
 * @param {string} name  the export's name as the row shows it */
export function finished(task, name) {
  if (!document.hidden || (task.status !== "SUCCEEDED" && task.status !== "FAILED")) return;
  unseen += 1;
  retitle();
  if (!canNotify() || Notification.permission !== "granted") return;
  const ready = task.status === "SUCCEEDED";
  const note = new Notification(t(ready ? "noticeReady" : "noticeFailed", { name }), {
    body: t(ready ? "noticeReadyBody" : "noticeFailedBody"),
    tag: `export-${task.id}`,
    lang: document.documentElement.lang,
  });
  note.addEventListener("click", () => {
    window.focus();
    showRow(task.id);
    note.close();
  });
}

/** Wire the notices: the count clears when the page is seen; the opt-in button asks the
 * browser once.
 * @param {(taskId: string) => void} spotlight  brings a task's row into view */
export function setUpNotices(spotlight) {
  showRow = spotlight;
  document.addEventListener("visibilitychange", () => {
    if (document.hidden || unseen === 0) return;
    unseen = 0;
    retitle();
  });
  const button = $("notify", HTMLButtonElement);
  button.addEventListener("click", async () => {
    await Notification.requestPermission();
    offer();
  });
  offer();
}
