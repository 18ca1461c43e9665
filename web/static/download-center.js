// The download center page: the caller's exports with their progress, a form to create
// one, download, cancel and retry. Plain DOM, no framework, no build step; every call goes to the
// public API with the caller's bearer token (see web/page.py).
"use strict";

const API = "/api/platform/v1/files/export-tasks";
const PAGE_SIZE = 20;
const ACTIVE = new Set(["PENDING", "RUNNING"]);
// Refresh period while a task is active, and otherwise (milliseconds).
const ACTIVE_REFRESH_MS = 1000;
const IDLE_REFRESH_MS = 10000;
const TOKEN_KEY = "export-center.token";

const state = { page: 1, timer: null };
const $ = (id) => document.getElementById(id);

// --- token -------------------------------------------------------------------------------

function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

function claims(jwt) {
  // Display only: the server checks the signature on every call.
  try {
    const part = jwt.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    return JSON.parse(atob(part.padEnd(part.length + ((4 - (part.length % 4)) % 4), "=")));
  } catch {
    return {};
  }
}

// --- API ---------------------------------------------------------------------------------

class ApiError extends Error {}

async function api(path, options = {}) {
  const response = await fetch(path, {
    ...options,
    headers: { Authorization: `Bearer ${token()}`, ...(options.headers || {}) },
  });
  if (response.status === 401) {
    sessionStorage.removeItem(TOKEN_KEY);
    show("sign-in");
    throw new ApiError("The token was rejected (expired or not valid here): paste a new one.");
  }
  let body;
  try {
    body = await response.json();
  } catch {
    throw new ApiError(`The server answered HTTP ${response.status} without a JSON body.`);
  }
  if (body.code !== "200") {
    throw new ApiError(body.message || `Error ${body.code}`);
  }
  return body.data;
}

// --- rendering ---------------------------------------------------------------------------

function show(section) {
  $("sign-in").hidden = section !== "sign-in";
  $("center").hidden = section !== "center";
  $("sign-out").hidden = section !== "center";
}

function banner(message, kind = "error") {
  const el = $("banner");
  el.textContent = message || "";
  el.className = kind;
  el.hidden = !message;
}

function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}

function formatNumber(text) {
  return text === null || text === undefined ? "?" : Number(text).toLocaleString("en");
}

function formatBytes(text) {
  const size = Number(text);
  if (!Number.isFinite(size)) return "";
  const units = ["B", "KB", "MB", "GB"];
  let value = size;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(unit === 0 ? 0 : 1)} ${units[unit]}`;
}

function formatTime(iso) {
  return iso ? new Date(iso).toLocaleString() : "";
}

function progressCell(task) {
  const cell = el("td", undefined, "progress");
  const done = Number(task.processedRows);
  const total = task.totalRows === null ? null : Number(task.totalRows);
  if (task.status === "PENDING" && done === 0) {
    cell.append(el("span", task.attemptCount > 0 ? "waiting to retry" : "queued"));
    return cell;
  }
  if (task.status === "RUNNING" && done === 0 && total === null) {
    cell.append(el("span", "starting"));
    return cell;
  }
  const bar = el("progress");
  if (total) {
    bar.max = total;
    bar.value = Math.min(done, total);
  }
  cell.append(bar, el("span", ` ${formatNumber(task.processedRows)} / ${formatNumber(task.totalRows)} rows`, "rows"));
  return cell;
}

function actionsCell(task) {
  const cell = el("td", undefined, "actions");
  if (task.status === "SUCCEEDED") {
    const button = el("button", "Download", "download");
    button.type = "button";
    button.addEventListener("click", () => download(task, button));
    cell.append(button);
  }
  if (ACTIVE.has(task.status)) {
    const button = el("button", "Cancel", "cancel");
    button.type = "button";
    button.setAttribute("aria-label", `Cancel ${task.taskName}`);
    button.addEventListener("click", () => cancel(task, button));
    cell.append(button);
  }
  if (task.status === "FAILED" || task.status === "CANCELLED") {
    const button = el("button", "Retry", "retry");
    button.type = "button";
    button.addEventListener("click", () => retry(task, button));
    cell.append(button);
  }
  return cell;
}

function row(task) {
  const tr = document.createElement("tr");
  tr.dataset.taskId = task.id;
  tr.dataset.status = task.status;
  const name = el("td", undefined, "name");
  name.append(el("div", task.taskName));
  if (task.failureMessage) name.append(el("div", task.failureMessage, "failure"));
  const status = el("td", task.status, `status status-${task.status}`);
  if (task.attemptCount > 1) status.title = `attempt ${task.attemptCount} of ${task.maxAttempts}`;
  const file = el("td", undefined, "file");
  if (task.fileName) {
    file.append(el("div", task.fileName), el("small", formatBytes(task.sizeBytes)));
    if (task.expiresAt) file.title = `kept until ${formatTime(task.expiresAt)}`;
  }
  tr.append(
    name,
    el("td", task.exportType, "type"),
    status,
    progressCell(task),
    el("td", formatTime(task.requestedAt), "requested"),
    file,
    actionsCell(task),
  );
  return tr;
}

// Rows by task id with the JSON they were drawn from: a refresh redraws only the tasks
// that changed, so a button under the pointer is not replaced every second.
const drawn = new Map();

function rowFor(task) {
  const json = JSON.stringify(task);
  const kept = drawn.get(task.id);
  if (kept && kept.json === json) return kept.tr;
  const tr = row(task);
  drawn.set(task.id, { json, tr });
  return tr;
}

function render(data) {
  const body = $("tasks").tBodies[0];
  const rows = data.items.map(rowFor);
  const shown = new Set(data.items.map((t) => t.id));
  for (const id of drawn.keys()) if (!shown.has(id)) drawn.delete(id);
  // Only touch the DOM where the order or a row changed.
  if (rows.length !== body.rows.length || rows.some((tr, i) => body.rows[i] !== tr)) {
    body.replaceChildren(...rows);
  }
  if (data.items.length === 0) {
    const empty = el("td", "No exports yet.");
    empty.colSpan = 7;
    body.append(el("tr"));
    body.lastChild.append(empty);
  }
  const total = Number(data.total);
  $("total").textContent = `(${data.totalCapped ? "more than " : ""}${total.toLocaleString("en")})`;
  const pages = Math.max(1, Math.ceil(total / PAGE_SIZE));
  $("page-label").textContent = `page ${state.page} of ${data.totalCapped ? "many" : pages}`;
  $("newer").disabled = state.page <= 1;
  $("older").disabled = !data.totalCapped && state.page >= pages;
  return data.items.some((t) => ACTIVE.has(t.status));
}

// --- actions -----------------------------------------------------------------------------

async function refresh() {
  clearTimeout(state.timer);
  let active = false;
  try {
    const query = new URLSearchParams({ page: state.page, pageSize: PAGE_SIZE });
    active = render(await api(`${API}?${query}`));
  } catch (error) {
    banner(error.message);
  }
  if (token()) {
    state.timer = setTimeout(refresh, active ? ACTIVE_REFRESH_MS : IDLE_REFRESH_MS);
  }
}

async function create(event) {
  event.preventDefault();
  let parameters;
  try {
    parameters = JSON.parse($("parameters").value || "{}");
  } catch (error) {
    banner(`Parameters are not valid JSON: ${error.message}`);
    return;
  }
  if (parameters === null || typeof parameters !== "object" || Array.isArray(parameters)) {
    banner("Parameters must be a JSON object, e.g. {\"status\": \"ACTIVE\"}.");
    return;
  }
  const body = { exportType: $("export-type").value.trim(), format: "XLSX", parameters };
  const name = $("task-name").value.trim();
  if (name) body.taskName = name;
  $("create").disabled = true;
  try {
    const task = await api(API, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    banner(`Export ${task.taskName} accepted.`, "info");
    state.page = 1;
  } catch (error) {
    banner(error.message);
  } finally {
    $("create").disabled = false;
  }
  await refresh();
}

async function download(task, button) {
  button.disabled = true;
  try {
    const response = await fetch(`${API}/${task.id}/download`, {
      headers: { Authorization: `Bearer ${token()}` },
    });
    const type = response.headers.get("Content-Type") || "";
    if (!response.ok || type.startsWith("application/json")) {
      // Errors come as the JSON envelope (expired, not yours …).
      const body = await response.json().catch(() => ({}));
      throw new ApiError(body.message || `Download failed: HTTP ${response.status}`);
    }
    const url = URL.createObjectURL(await response.blob());
    const link = el("a");
    link.href = url;
    link.download = task.fileName || `export-${task.id}.xlsx`;
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
  } catch (error) {
    banner(error.message);
  } finally {
    button.disabled = false;
  }
}

async function cancel(task, button) {
  button.disabled = true;
  try {
    await api(`${API}/${task.id}/cancel`, { method: "POST" });
    banner(`Export ${task.taskName} cancelled.`, "info");
  } catch (error) {
    banner(error.message);
  }
  await refresh();
}

async function retry(task, button) {
  button.disabled = true;
  try {
    await api(`${API}/${task.id}/retry`, { method: "POST" });
    banner(`Export ${task.taskName} queued again.`, "info");
  } catch (error) {
    banner(error.message);
  }
  await refresh();
}

// --- start -------------------------------------------------------------------------------

function start() {
  $("token-form").onsubmit = (event) => {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $("token").value.trim());
    $("token").value = "";
    banner("");
    start();
  };
  $("sign-out").onclick = () => {
    sessionStorage.removeItem(TOKEN_KEY);
    clearTimeout(state.timer);
    $("who").textContent = "";
    show("sign-in");
  };
  $("create-form").onsubmit = create;
  $("newer").onclick = () => { state.page -= 1; refresh(); };
  $("older").onclick = () => { state.page += 1; refresh(); };
  if (!token()) {
    show("sign-in");
    return;
  }
  const who = claims(token());
  $("who").textContent = who.sub ? `user ${who.sub}, tenant ${who.tenant_id} (${who.app_code})` : "";
  show("center");
  refresh();
}

if (document.readyState === "loading") {
  document.addEventListener("DOMContentLoaded", start, { once: true });
} else {
  start();
}
