// @ts-check
// The page's API client (the server's side is web/api.py), and its only door to the
// server: the public API with the cookie session of POST /api/platform/v1/session
// (README, "Download center page"). The token is sent once, in the sign-in body; after
// that the browser sends the HttpOnly session cookie, and every state-changing call
// carries X-CSRF-Token copied from the export_center_csrf cookie (a page of another site
// can make the browser send the cookie, but cannot read this one). The typedefs below are
// the answers' JSON as web/schemas.py declares it (64-bit numbers as strings).
"use strict";

import { t } from "./i18n.js";

/** @typedef {"PENDING" | "RUNNING" | "SUCCEEDED" | "FAILED" | "EXPIRED" | "CANCELLED"} TaskStatus */
/** @typedef {"retry" | "edit" | "support"} Remedy  What may help a failed export. */
/** @typedef {{kind: string, detail: string}} DataWarning  A note on the file's data. */

/**
 * @typedef {object} Task  An export task (web/schemas.py, Task).
 * @property {string} id
 * @property {string} taskNo
 * @property {string} exportType
 * @property {string} taskName
 * @property {string} format
 * @property {TaskStatus} status
 * @property {number} dispatchVersion  The attempt's version; grows with each retry.
 * @property {number} attemptCount
 * @property {number} maxAttempts
 * @property {number} handbackCount
 * @property {string} processedRows
 * @property {string | null} totalRows
 * @property {string | null} fileName
 * @property {string | null} sizeBytes
 * @property {string | null} failureMessage
 * @property {string | null} failureCode
 * @property {string | null} failureReason
 * @property {Remedy | null} remedy
 * @property {string} requestedAt  ISO-8601, as are the other times.
 * @property {string | null} startedAt
 * @property {string | null} completedAt
 * @property {string | null} expiresAt
 * @property {string | null} nextRetryAt
 * @property {string} requestedBy
 * @property {string | null} requesterName
 * @property {string} tenantId
 * @property {string} appCode
 * @property {Record<string, unknown>} parameters
 * @property {string[]} warnings
 * @property {DataWarning[]} dataWarnings
 * @property {string | null} lastError
 * @property {string | null} traceId
 */
/** @typedef {Task & {duplicate: boolean}} CreatedTask  A create's answer: the task, and
 * whether it is the one an identical earlier request created. */
/** @typedef {{reason: string, message: string}} WaitingNotice  Why new exports wait. */
/** @typedef {{items: Task[], total: string, totalCapped: boolean, page: number, pageSize: number, waiting: WaitingNotice | null}} TaskPage */

/**
 * @typedef {object} TaskEvent  One event of a task's history (web/schemas.py, TaskEvent).
 * @property {string} id
 * @property {string} taskId
 * @property {string} kind  created, claimed, attempt_failed … (actors/core/events.py)
 * @property {string} at
 * @property {EventDetail & Record<string, unknown>} detail  The kind's own fields.
 */
/**
 * @typedef {object} EventDetail  The fields of an event's detail the page reads (each kind
 *   has its own, written by db/store/; the page shows all of them as they are, too).
 * @property {string} [code]  attempt_failed: the failure code.
 * @property {string} [message]  attempt_failed: the technical message.
 * @property {number} [attempt]  claimed, attempt_failed: the attempt's number.
 * @property {number} [rows]  succeeded
 * @property {number} [bytes]  succeeded
 * @property {number} [seconds]  succeeded: how long the run took.
 * @property {number} [by]  created, cancelled, downloaded: the user's id.
 * @property {boolean} [manual]  retry_scheduled: a person asked for it.
 * @property {string} [at]  retry_scheduled: when the next attempt may run.
 */
/** @typedef {{items: TaskEvent[], truncated: boolean}} TaskEvents */

/** @typedef {{value: string, label: string, translations: Record<string, string>}} ChoiceValue */
/**
 * @typedef {object} ParameterHint  A parameter an export type declares.
 * @property {string} name
 * @property {string} type  string, integer, number, boolean, date, datetime
 * @property {boolean} required
 * @property {string} label
 * @property {string} description
 * @property {ChoiceValue[]} values  Fixed values to choose from; [] when any.
 * @property {number | null} minimum
 * @property {number | null} maximum
 * @property {Record<string, Record<string, string>>} translations  Language tag to label
 *   and description in it.
 */
/**
 * @typedef {object} ExportType  An export type the caller may request.
 * @property {string} exportType
 * @property {string} displayName
 * @property {string} description
 * @property {string[]} formats
 * @property {number} maxRows
 * @property {ParameterHint[]} parameters
 * @property {Record<string, Record<string, string>>} translations  Language tag to
 *   displayName and description in it.
 */
/**
 * @typedef {object} NewTask  A create's request body.
 * @property {string} exportType
 * @property {string} format
 * @property {string} taskName
 * @property {Record<string, unknown>} parameters
 */

/**
 * @typedef {object} Session  The signed-in user (web/schemas.py, Session).
 * @property {string} userId
 * @property {string} tenantId
 * @property {string} appCode
 * @property {string[]} perms
 * @property {string | null} name  The token's name claim.
 * @property {string} expiresAt
 * @property {string | null} csrfToken
 */

/** @typedef {{code: string, message: string, data: unknown}} Envelope  Every answer's body. */

const TASKS = "/api/platform/v1/files/export-tasks";
const TYPES = "/api/platform/v1/files/export-types";
export const PROGRESS = "/api/platform/v1/files/progress";
const SESSION = "/api/platform/v1/session";
const CSRF_COOKIE = "export_center_csrf";
const SAFE_METHODS = new Set(["GET", "HEAD"]);

/** A refusal or failure: ``message`` for people (may be the service's own words), ``code``
 * the envelope code when the service answered one, ``detail`` its technical message. */
export class ApiError extends Error {
  /** @param {string} message
   * @param {{code?: string, detail?: string}} [more] */
  constructor(message, { code = "", detail = "" } = {}) {
    super(message);
    this.code = code;
    this.detail = detail;
  }
}
export class SignedOut extends ApiError {}

/** The words of any error: its message (an ApiError's is for people), else the value as
 * text.
 * @param {unknown} error
 * @returns {string} */
export function messageOf(error) {
  return error instanceof Error ? error.message : String(error);
}

let onSignedOut = () => {};

/** Set what happens when the server says the session is gone (HTTP 401).
 * @param {() => void} handler */
export function whenSignedOut(handler) {
  onSignedOut = handler;
}

function csrfToken() {
  for (const part of document.cookie.split(";")) {
    const [name, ...value] = part.trim().split("=");
    if (name === CSRF_COOKIE) return decodeURIComponent(value.join("="));
  }
  return "";
}

/** Fetch with the session cookie; adds the CSRF header on anything but GET and HEAD.
 * @param {string} path
 * @param {{method?: string, headers?: Record<string, string>, body?: string}} [options]
 * @returns {Promise<Response>} */
async function send(path, options = {}) {
  const method = (options.method || "GET").toUpperCase();
  /** @type {Record<string, string>} */
  const headers = { Accept: "application/json", ...(options.headers || {}) };
  if (!SAFE_METHODS.has(method)) {
    const token = csrfToken();
    if (token) headers["X-CSRF-Token"] = token;
  }
  return fetch(path, { ...options, method, headers, credentials: "same-origin" });
}

/** The envelope of ``response`` (its JSON, trusted to be one: web/schemas.py).
 * @param {Response} response
 * @returns {Promise<Envelope>} */
async function envelope(response) {
  try {
    return await response.json();
  } catch {
    throw new ApiError(t("failedRequest"), {
      detail: `The server answered HTTP ${response.status} without a JSON body.`,
    });
  }
}

/** The error of an envelope that is not a success: the service's message is both the words
 * (English, naming the field or limit) and the detail; the page puts the catalogue's words
 * for its code in front (banner.js, ``showError``).
 * @param {Envelope} body */
function refusal(body) {
  const message = body.message || `Error ${body.code}`;
  return new ApiError(message, { code: String(body.code || ""), detail: message });
}

/** Call the API; resolves to the envelope's data, rejects with ApiError (its message).
 * @param {string} path
 * @param {{method?: string, headers?: Record<string, string>, body?: string}} [options]
 * @returns {Promise<unknown>} */
async function api(path, options = {}) {
  const response = await send(path, options);
  const body = await envelope(response);
  if (response.status === 401) {
    onSignedOut();
    throw new SignedOut(t("sessionEnded"), { code: "401", detail: body.message });
  }
  if (body.code !== "200") throw refusal(body);
  return body.data;
}

/** @param {string} path
 * @param {unknown} data */
function postJson(path, data) {
  return api(path, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(data),
  });
}

// The routes the page calls; each answer's data is what web/schemas.py declares for it.

/** A page of the caller's tasks (``query``: filter-query.js, listQuery).
 * @param {URLSearchParams} query */
export async function listTasks(query) {
  return /** @type {TaskPage} */ (await api(`${TASKS}?${query}`));
}

/** Ask for an export.
 * @param {NewTask} task */
export async function createTask(task) {
  return /** @type {CreatedTask} */ (await postJson(TASKS, task));
}

/** Cancel task ``id``; resolves to the task as it is then.
 * @param {string} id */
export async function cancelTask(id) {
  return /** @type {Task} */ (await api(`${TASKS}/${id}/cancel`, { method: "POST" }));
}

/** Run task ``id`` again; resolves to the task queued again.
 * @param {string} id */
export async function retryTask(id) {
  return /** @type {Task} */ (await api(`${TASKS}/${id}/retry`, { method: "POST" }));
}

/** The history of task ``id``, oldest first.
 * @param {string} id */
export async function taskEvents(id) {
  return /** @type {TaskEvents} */ (await api(`${TASKS}/${id}/events`));
}

/** The export types the caller may request. */
export async function loadExportTypes() {
  return /** @type {ExportType[]} */ (await api(TYPES));
}

/** The address of task ``id``'s file (the browser follows it with the session cookie).
 * @param {string} id */
export function fileUrl(id) {
  return `${TASKS}/${id}/download`;
}

/** Whether task ``id``'s file can be had: the HEAD answer (no body; 200 when it can).
 * @param {string} id */
export function fileHead(id) {
  return send(fileUrl(id), { method: "HEAD" });
}

/** The file of task ``id``: the raw answer (the file, or an envelope saying why not).
 * @param {string} id */
export function fetchFile(id) {
  return send(fileUrl(id));
}

/** The current session's data or null.
 * @returns {Promise<Session | null>} */
export async function currentSession() {
  const response = await send(SESSION);
  if (response.status === 401) return null;
  const body = await envelope(response);
  if (body.code !== "200") throw refusal(body);
  return /** @type {Session} */ (body.data);
}

/** Exchange a JWT for the session cookies; rejects with ApiError when it is refused.
 * @param {string} token
 * @returns {Promise<Session>} */
export async function signIn(token) {
  const response = await send(SESSION, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ token }),
  });
  const body = await envelope(response);
  if (body.code !== "200") {
    if (response.status !== 401) throw refusal(body);
    throw new ApiError(t("tokenRejected"), { code: "401", detail: body.message || "" });
  }
  return /** @type {Session} */ (body.data);
}

/** End the session: the server clears both cookies.
 * @returns {Promise<string | null>}  the identity provider's address that ends its
 *   session too (the page goes there), or null */
export async function signOut() {
  const response = await send(SESSION, { method: "DELETE" });
  if (!response.ok && response.status !== 401) {
    throw refusal(await envelope(response));
  }
  if (response.status === 401) return null;
  const body = await envelope(response);
  const data = /** @type {{signOutUrl?: string | null} | null} */ (body.data);
  return (data && data.signOutUrl) || null;
}

/** How this service signs people in: through the company's identity provider (``oidc``,
 * with its ``name`` for the button) or by a pasted token (GET /auth/options).
 * @returns {Promise<{oidc: boolean, name?: string | null}>} */
export async function signInOptions() {
  const response = await send("/auth/options");
  if (!response.ok) return { oidc: false };
  return response.json();
}
