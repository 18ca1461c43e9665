// The page's API client (the server's side is web/api.py), and its only door to the
// server: the public API with the cookie session of
// POST /api/platform/v1/session (README, "Download center page"). The token is sent once,
// in the sign-in body; after that the browser sends the HttpOnly session cookie, and every
// state-changing call carries X-CSRF-Token copied from the export_center_csrf cookie (a
// page of another site can make the browser send the cookie, but cannot read this one).
"use strict";

import { t } from "./i18n.js";

export const TASKS = "/api/platform/v1/files/export-tasks";
export const TYPES = "/api/platform/v1/files/export-types";
export const PROGRESS = "/api/platform/v1/files/progress";
const SESSION = "/api/platform/v1/session";
const CSRF_COOKIE = "export_center_csrf";
const SAFE_METHODS = new Set(["GET", "HEAD"]);

/** A refusal or failure: ``message`` for people (may be the service's own words), ``code``
 * the envelope code when the service answered one, ``detail`` its technical message. */
export class ApiError extends Error {
  constructor(message, { code = "", detail = "" } = {}) {
    super(message);
    this.code = code;
    this.detail = detail;
  }
}
export class SignedOut extends ApiError {}

let onSignedOut = () => {};

/** Set what happens when the server says the session is gone (HTTP 401). */
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

/** Fetch with the session cookie; adds the CSRF header on anything but GET and HEAD. */
export async function send(path, options = {}) {
  const method = (options.method || "GET").toUpperCase();
  const headers = { Accept: "application/json", ...(options.headers || {}) };
  if (!SAFE_METHODS.has(method)) {
    const token = csrfToken();
    if (token) headers["X-CSRF-Token"] = token;
  }
  return fetch(path, { ...options, method, headers, credentials: "same-origin" });
}

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
 * for its code in front (download-center.js, ``showError``). */
function refusal(body) {
  const message = body.message || `Error ${body.code}`;
  return new ApiError(message, { code: String(body.code || ""), detail: message });
}

/** Call the API; resolves to the envelope's data, rejects with ApiError (its message). */
export async function api(path, options = {}) {
  const response = await send(path, options);
  const body = await envelope(response);
  if (response.status === 401) {
    onSignedOut();
    throw new SignedOut(t("sessionEnded"), { code: "401", detail: body.message });
  }
  if (body.code !== "200") throw refusal(body);
  return body.data;
}

export function postJson(path, data) {
  return api(path, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(data),
  });
}

/** The current session's data ({userId, tenantId, appCode, perms, expiresAt}) or null. */
export async function currentSession() {
  const response = await send(SESSION);
  if (response.status === 401) return null;
  const body = await envelope(response);
  if (body.code !== "200") throw refusal(body);
  return body.data;
}

/** Exchange a JWT for the session cookies; rejects with ApiError when it is refused. */
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
  return body.data;
}

/** End the session: the server clears both cookies. */
export async function signOut() {
  const response = await send(SESSION, { method: "DELETE" });
  if (!response.ok && response.status !== 401) {
    throw refusal(await envelope(response));
  }
}
