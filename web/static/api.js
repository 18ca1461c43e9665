// The page's only door to the server: the public API with the cookie session of
// POST /api/platform/v1/session (README, "Download center page"). The token is sent once,
// in the sign-in body; after that the browser sends the HttpOnly session cookie, and every
// state-changing call carries X-CSRF-Token copied from the export_center_csrf cookie (a
// page of another site can make the browser send the cookie, but cannot read this one).
"use strict";

export const TASKS = "/api/platform/v1/files/export-tasks";
export const TYPES = "/api/platform/v1/files/export-types";
export const PROGRESS = "/api/platform/v1/files/progress";
const SESSION = "/api/platform/v1/session";
const CSRF_COOKIE = "export_center_csrf";
const SAFE_METHODS = new Set(["GET", "HEAD"]);

export class ApiError extends Error {}
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
    throw new ApiError(`The server answered HTTP ${response.status} without a JSON body.`);
  }
}

/** Call the API; resolves to the envelope's data, rejects with ApiError (its message). */
export async function api(path, options = {}) {
  const response = await send(path, options);
  const body = await envelope(response);
  if (response.status === 401) {
    onSignedOut();
    throw new SignedOut("Your session has ended (expired or signed out): sign in again.");
  }
  if (body.code !== "200") throw new ApiError(body.message || `Error ${body.code}`);
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
  if (body.code !== "200") throw new ApiError(body.message || `Error ${body.code}`);
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
    throw new ApiError(
      response.status === 401
        ? `The token was rejected (${body.message || "expired or not valid here"}): paste a new one.`
        : body.message || `Error ${body.code}`,
    );
  }
  return body.data;
}

/** End the session: the server clears both cookies. */
export async function signOut() {
  const response = await send(SESSION, { method: "DELETE" });
  if (!response.ok && response.status !== 401) {
    const body = await envelope(response);
    throw new ApiError(body.message || `Sign-out failed: HTTP ${response.status}`);
  }
}
