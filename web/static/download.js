// @ts-check
// A task's file, saved by the browser: fetched with the session cookie (GET
// .../export-tasks/{id}/download), handed to the browser as a download under the task's
// file name, or the refusal (expired, not yours …) told in the banner.
"use strict";

import { banner, showError } from "./banner.js";
import { ApiError, fetchFile } from "./client.js";
import { el } from "./dom.js";
import { t } from "./i18n.js";
import { showSection } from "./sign-in.js";

/** @import { Envelope, Task } from "./client.js" */

/** Download ``task``'s file (``button`` is disabled meanwhile).
 * @param {Task} task
 * @param {HTMLButtonElement} button */
export async function download(task, button) {
  button.disabled = true;
  try {
    const response = await fetchFile(task.id);
    const type = response.headers.get("Content-Type") || "";
    if (!response.ok || type.startsWith("application/json")) {
      // Errors come as the JSON envelope (expired, not yours …).
      /** @type {Partial<Envelope>} */
      const body = await response.json().catch(() => ({}));
      if (response.status === 401) showSection("sign-in");
      const message = body.message || `HTTP ${response.status}`;
      showError(new ApiError(message, { code: String(body.code || response.status), detail: message }));
      return;
    }
    const url = URL.createObjectURL(await response.blob());
    const link = el("a");
    link.href = url;
    link.download = task.fileName || `export-${task.id}.xlsx`;
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
    banner(() => t("downloading", { file: link.download }), "info");
  } catch (error) {
    showError(error);
  } finally {
    button.disabled = false;
  }
}
