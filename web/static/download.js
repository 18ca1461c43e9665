// @ts-check
// A task's file, saved by the browser's own download manager: the page asks first whether
// the file can be had (HEAD .../export-tasks/{id}/download, with the session cookie) and
// then follows a plain link to it, so the browser shows the download's progress, can
// resume it, never holds the file in the page's memory, and in redirect mode follows the
// service's answer to the bucket's short-lived address. A refusal (expired, not yours,
// the storage unreachable …) is told in the banner instead, in the person's language.
"use strict";

import { banner, showError } from "./banner.js";
import { ApiError, fetchFile, fileUrl, fileHead } from "./client.js";
import { el } from "./dom.js";
import { t } from "./i18n.js";
import { showSection } from "./sign-in.js";

/** @import { Envelope, Task } from "./client.js" */

const JSON_TYPE = "application/json";

/** Buttons whose check is under way: a second press meanwhile does nothing. The button
 * is not disabled, because a disabled button drops the keyboard focus. */
const busy = new WeakSet();

/** Download ``task``'s file; the keyboard focus stays on ``button``.
 * @param {Task} task
 * @param {HTMLButtonElement} button */
export async function download(task, button) {
  if (busy.has(button)) return;
  busy.add(button);
  button.setAttribute("aria-busy", "true");
  try {
    const check = await fileHead(task.id);
    // A refusal may come as HTTP 200 with the envelope's own code (web/errors.py): the
    // file is the answer only when it is not JSON.
    const isFile = check.ok && !(check.headers.get("Content-Type") || "").startsWith(JSON_TYPE);
    if (!isFile && (await refused(task.id, check.status))) return;
    const link = el("a");
    link.href = fileUrl(task.id);
    // Empty: the name comes from the answer's Content-Disposition (the task's file name,
    // UTF-8), and a same-origin answer is saved, never shown in place of the page.
    link.download = "";
    link.hidden = true;
    document.body.append(link);
    link.click();
    link.remove();
    banner(() => t("downloading", { file: task.fileName || `export-${task.id}.xlsx` }), "info");
  } catch (error) {
    showError(error);
  } finally {
    busy.delete(button);
    button.removeAttribute("aria-busy");
  }
}

/** Tell why task ``id``'s file cannot be had, and say whether it cannot: a HEAD answer
 * has no body, so the envelope (a few hundred bytes; a refusal never sends the file) is
 * read with a GET.
 * @param {string} id
 * @param {number} status  the HEAD answer's status
 * @returns {Promise<boolean>}  false when the file can be had after all */
async function refused(id, status) {
  if (status === 401) {
    showSection("sign-in");
    return true;
  }
  const response = await fetchFile(id);
  const type = response.headers.get("Content-Type") || "";
  /** @type {Partial<Envelope>} */
  const body = type.startsWith(JSON_TYPE) ? await response.json().catch(() => ({})) : {};
  if (response.ok && !body.code) {
    // It became downloadable between the two requests (a storage back meanwhile).
    await response.body?.cancel();
    return false;
  }
  const message = body.message || `HTTP ${response.status}`;
  showError(new ApiError(message, { code: String(body.code || response.status), detail: message }));
  return true;
}
