// @ts-check
// What a row's Stop and Retry buttons do: Stop asks first (confirm.js), then cancels the
// export (POST .../export-tasks/{id}/cancel) and says so, or says it had finished already;
// Retry runs a failed or stopped export again (POST .../retry). Either way the list is
// refreshed and the keyboard focus stays in the row.
"use strict";

import { banner, showError } from "./banner.js";
import { ApiError, cancelTask, retryTask } from "./client.js";
import { confirmStop } from "./confirm.js";
import { t } from "./i18n.js";
import { refocus } from "./tasks.js";

/** @import { Task } from "./client.js" */

/**
 * @typedef {object} ListPage  What the actions need of the page's list.
 * @property {() => Promise<void>} refresh  load the list again
 * @property {(id: string) => {tr: HTMLTableRowElement, task: Task} | undefined} drawnRow
 *   the row drawn for a task, and the task it was drawn from
 */

/** The row actions over ``page``'s list.
 * @param {ListPage} page */
export function rowActions(page) {
  /** After an action on ``task`` by ``button`` (disabled meanwhile, so the focus fell to
   * the page), give the keyboard focus back to the task's row.
   * @param {Task} task
   * @param {HTMLButtonElement} button */
  function keepFocus(task, button) {
    if (document.activeElement && document.activeElement !== document.body) return;
    const kept = page.drawnRow(task.id);
    if (kept && kept.tr.isConnected) refocus(kept.tr, button);
  }

  /** Stop ``task`` once the person confirms it (``button`` is disabled meanwhile).
   * @param {Task} task
   * @param {HTMLButtonElement} button */
  async function cancel(task, button) {
    if (!(await confirmStop(task.taskName))) return;
    button.disabled = true;
    try {
      await cancelTask(task.id);
      banner(() => t("cancelledBanner", { name: task.taskName }), "info");
    } catch (error) {
      button.disabled = false;
      await page.refresh();
      const now = page.drawnRow(task.id);
      // Too late: it finished meanwhile. Say so, not "changed meanwhile".
      if (error instanceof ApiError && error.code === "409" && now && now.task.status === "SUCCEEDED") {
        banner(() => t("alreadyDone", { name: task.taskName }), "info");
      } else {
        showError(error);
      }
    }
    await page.refresh();
    keepFocus(task, button);
  }

  /** Run ``task`` again (``button`` is disabled meanwhile).
   * @param {Task} task
   * @param {HTMLButtonElement} button */
  async function retry(task, button) {
    button.disabled = true;
    try {
      const again = await retryTask(task.id);
      banner(() => t("retried", { name: task.taskName, max: again.maxAttempts }), "info");
    } catch (error) {
      showError(error);
      button.disabled = false;
    }
    await page.refresh();
    keepFocus(task, button);
  }

  return { cancel, retry };
}
