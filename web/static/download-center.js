// The download center page: sign in, the caller's exports (every requester's with
// platform:download:all) with live progress, filters and paging, a new-export form built
// from the export types the caller may request, download, cancel, retry and each task's
// history. Plain DOM in ES modules, no framework, no build step (see web/page.py).
"use strict";

import { api, ApiError, currentSession, postJson, send, signIn, signOut, TASKS, TYPES, whenSignedOut } from "./api.js";
import { historyTaskChanged, openHistory, setUpDrawer } from "./drawer.js";
import { $, el } from "./format.js";
import { formParameters, option, parameterField } from "./parameters.js";
import { startProgress, stopProgress } from "./progress.js";
import { ACTIVE, describe, stateOf, taskRow } from "./tasks.js";

const PAGE_SIZE = 20;
const ADMIN_PERMISSION = "platform:download:all";
// List refresh periods, milliseconds: while a shown task is active and the stream is
// down; and while the stream is up, to pick up what it does not carry.
const ACTIVE_REFRESH_MS = 1000;
const IDLE_REFRESH_MS = 15000;
// Without the stream, a task created elsewhere shows up within this, milliseconds.
const POLL_IDLE_MS = 5000;
// A pushed change the list must show (new task, finished task) refreshes it this soon.
const PUSH_REFRESH_MS = 200;

const state = {
  session: null,
  page: 1,
  filters: { statuses: [], exportType: "", requestedBy: "", requestedFrom: "", requestedTo: "" },
  types: [],
  timer: null,
  mode: "polling",
  lastShown: [],
};

// Rows by task id with the task they were drawn from: an update redraws only the rows
// that changed, so a button under the pointer or the keyboard focus is not replaced.
const drawn = new Map();

// --- messages ----------------------------------------------------------------------------

function banner(message, kind = "error") {
  const node = $("banner");
  node.textContent = message || "";
  node.className = kind;
  node.hidden = !message;
}

function announce(message) {
  $("live").textContent = message;
}

function show(section) {
  $("sign-in").hidden = section !== "sign-in";
  $("center").hidden = section !== "center";
  $("sign-out").hidden = section !== "center";
}

function isAdmin() {
  return Boolean(state.session && (state.session.perms || []).includes(ADMIN_PERMISSION));
}

// --- the list ----------------------------------------------------------------------------

const actions = { download, cancel, retry, history: openHistory };

function progressStep(task) {
  // Quarters of the total: a screen reader hears a running export at 25 %, 50 %, 75 %.
  if (task.status !== "RUNNING" || !task.totalRows) return 0;
  return Math.floor((4 * Number(task.processedRows)) / Number(task.totalRows));
}

/** The row for ``task``: the drawn one when nothing changed, else a new one. */
function rowFor(task) {
  const json = JSON.stringify(task);
  const kept = drawn.get(task.id);
  if (kept && kept.json === json) return kept.tr;
  if (kept && (stateOf(kept.task) !== stateOf(task) || progressStep(kept.task) !== progressStep(task))) {
    announce(describe(task));
  }
  if (kept) historyTaskChanged(task); // an open drawer on it reloads its events
  const tr = taskRow(task, actions);
  drawn.set(task.id, { json, tr, task });
  return tr;
}

/** Move the keyboard focus to the button of ``tr`` like ``button`` (same class), or to its
 * History button when that one is gone (a Cancel button once the export is cancelled). */
function refocus(tr, button) {
  const name = button.classList[0];
  const again = (name && tr.querySelector(`button.${name}`)) || tr.querySelector("button.history");
  if (again) again.focus();
}

/** Put ``tr`` in place of ``old``; the focus stays in the row. */
function replaceRow(old, tr) {
  const focused = old.contains(document.activeElement) ? document.activeElement : null;
  old.replaceWith(tr);
  if (focused) refocus(tr, focused);
}

function render(data) {
  const body = $("tasks").tBodies[0];
  const rows = data.items.map(rowFor);
  const shown = new Set(data.items.map((t) => t.id));
  for (const id of drawn.keys()) if (!shown.has(id)) drawn.delete(id);
  if (rows.length !== body.rows.length || rows.some((tr, i) => body.rows[i] !== tr)) {
    const focused = body.contains(document.activeElement) ? document.activeElement : null;
    const focusedRow = focused && focused.closest("tr");
    body.replaceChildren(...rows);
    if (focusedRow && !focusedRow.isConnected) {
      const again = rows.find((tr) => tr.dataset.taskId === focusedRow.dataset.taskId);
      if (again) refocus(again, focused);
    }
  }
  if (data.items.length === 0) {
    const empty = el("td", anyFilter() ? "No exports match these filters." : "No exports yet.");
    empty.colSpan = 8;
    const tr = el("tr", undefined, "empty");
    tr.append(empty);
    body.append(tr);
  }
  state.lastShown = data.items;
  const total = Number(data.total);
  const count = `${data.totalCapped ? "more than " : ""}${total.toLocaleString("en")}`;
  $("total").textContent = `${count} ${total === 1 && !data.totalCapped ? "export" : "exports"}.`;
  const pages = Math.max(1, Math.ceil(total / PAGE_SIZE));
  $("page-label").textContent = `Page ${state.page} of ${data.totalCapped ? "many" : pages}`;
  $("newer").disabled = state.page <= 1;
  $("older").disabled = !data.totalCapped && state.page >= pages;
}

/** A task the stream pushed: redraw its row if shown; refresh the list if it must change. */
function pushed(task) {
  const kept = drawn.get(task.id);
  if (!kept) {
    if (state.page === 1) schedule(PUSH_REFRESH_MS); // a new task, maybe on this page
    return;
  }
  const merged = { ...kept.task, ...task };
  const tr = rowFor(merged);
  if (tr !== kept.tr && kept.tr.isConnected) replaceRow(kept.tr, tr);
  state.lastShown = state.lastShown.map((t) => (t.id === merged.id ? merged : t));
  if (!ACTIVE.has(merged.status)) schedule(PUSH_REFRESH_MS); // totals, filters, order
}

function anyFilter() {
  const f = state.filters;
  return (
    f.statuses.length > 0 || f.exportType !== "" || f.requestedBy !== "" ||
    f.requestedFrom !== "" || f.requestedTo !== ""
  );
}

/** The start of the local day ``date`` (yyyy-mm-dd) plus ``days``, as an ISO-8601 UTC
 * time: the person means their own calendar day, the API takes instants. */
function dayStart(date, days = 0) {
  const [year, month, day] = date.split("-").map(Number);
  return new Date(year, month - 1, day + days).toISOString();
}

function listQuery() {
  const query = new URLSearchParams({ page: state.page, pageSize: PAGE_SIZE });
  for (const status of state.filters.statuses) query.append("status", status);
  if (state.filters.exportType) query.set("exportType", state.filters.exportType);
  if (state.filters.requestedBy && isAdmin()) query.set("requestedBy", state.filters.requestedBy);
  // requestedTo is exclusive: the day after the last day asked for, at its start.
  if (state.filters.requestedFrom) query.set("requestedFrom", dayStart(state.filters.requestedFrom));
  if (state.filters.requestedTo) query.set("requestedTo", dayStart(state.filters.requestedTo, 1));
  return query;
}

/** How soon to refresh the list again, milliseconds. The stream carries every live task
 * the caller sees (an administrator's too), so while it is up the list is only refreshed
 * to pick up what the stream does not carry (another tab's new export, an expiry). */
function nextRefresh() {
  if (state.mode === "live") return IDLE_REFRESH_MS;
  return state.lastShown.some((t) => ACTIVE.has(t.status)) ? ACTIVE_REFRESH_MS : POLL_IDLE_MS;
}

function schedule(ms) {
  clearTimeout(state.timer);
  state.timer = setTimeout(refresh, ms);
}

async function refresh() {
  clearTimeout(state.timer);
  state.timer = null;
  if (!state.session) return;
  try {
    render(await api(`${TASKS}?${listQuery()}`));
  } catch (error) {
    banner(error.message);
  }
  if (state.session && state.timer === null) schedule(nextRefresh());
}

function setMode(mode) {
  state.mode = mode;
  const node = $("updates");
  node.dataset.mode = mode;
  node.textContent = {
    live: "Progress is live.",
    connecting: "Connecting to live progress…",
    polling: "Live progress unavailable: refreshing every second while an export runs.",
  }[mode];
  if (mode === "polling" && state.session) schedule(ACTIVE_REFRESH_MS);
}

// --- actions -----------------------------------------------------------------------------

async function download(task, button) {
  button.disabled = true;
  try {
    const response = await send(`${TASKS}/${task.id}/download`);
    const type = response.headers.get("Content-Type") || "";
    if (!response.ok || type.startsWith("application/json")) {
      // Errors come as the JSON envelope (expired, not yours …).
      const body = await response.json().catch(() => ({}));
      if (response.status === 401) show("sign-in");
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
    banner(`Downloading ${link.download}.`, "info");
  } catch (error) {
    banner(error.message);
  } finally {
    button.disabled = false;
  }
}

/** After an action on ``task`` by ``button`` (disabled meanwhile, so the focus fell to the
 * page), give the keyboard focus back to the task's row. */
function keepFocus(task, button) {
  if (document.activeElement && document.activeElement !== document.body) return;
  const kept = drawn.get(task.id);
  if (kept && kept.tr.isConnected) refocus(kept.tr, button);
}

async function cancel(task, button) {
  button.disabled = true;
  try {
    await api(`${TASKS}/${task.id}/cancel`, { method: "POST" });
    banner(`Export ${task.taskName} cancelled.`, "info");
  } catch (error) {
    banner(error.message);
    button.disabled = false;
  }
  await refresh();
  keepFocus(task, button);
}

async function retry(task, button) {
  button.disabled = true;
  try {
    await api(`${TASKS}/${task.id}/retry`, { method: "POST" });
    banner(`Export ${task.taskName} queued again.`, "info");
  } catch (error) {
    banner(error.message);
    button.disabled = false;
  }
  await refresh();
  keepFocus(task, button);
}

// --- the new-export form -----------------------------------------------------------------

function chosenType() {
  return state.types.find((t) => t.exportType === $("export-type").value);
}

function showTypeForm() {
  const type = chosenType();
  const fields = $("parameter-fields");
  fields.replaceChildren(...(type ? type.parameters.map(parameterField) : []));
  $("parameters").hidden = !type || type.parameters.length === 0;
  const formats = type ? type.formats : [];
  $("format").replaceChildren(...formats.map((f) => option(f, f)));
  const hints = [];
  if (type && type.description) hints.push(type.description);
  if (type && type.maxRows) hints.push(`At most ${Number(type.maxRows).toLocaleString("en")} rows.`);
  $("type-hint").textContent = hints.join(" ");
}

async function loadTypes() {
  try {
    state.types = await api(TYPES);
  } catch (error) {
    state.types = [];
    $("type-hint").textContent = `The export types could not be loaded: ${error.message}`;
  }
  const choices = state.types.map((t) => option(t.exportType, t.displayName || t.exportType));
  $("export-type").replaceChildren(...choices);
  $("filter-type").replaceChildren(option("", "Any"), ...choices.map((o) => o.cloneNode(true)));
  $("create").disabled = state.types.length === 0;
  if (state.types.length === 0 && !$("type-hint").textContent) {
    $("type-hint").textContent = "There is no export type you may request.";
  }
  showTypeForm();
}

async function create(event) {
  event.preventDefault();
  let parameters;
  try {
    parameters = formParameters();
  } catch (error) {
    banner(error.message);
    return;
  }
  const body = { exportType: $("export-type").value, format: $("format").value || "XLSX", parameters };
  const name = $("task-name").value.trim();
  if (name) body.taskName = name;
  $("create").disabled = true;
  try {
    const task = await postJson(TASKS, body);
    banner(`Export ${task.taskName} accepted.`, "info");
    $("task-name").value = "";
    state.page = 1;
  } catch (error) {
    banner(error.message);
  } finally {
    $("create").disabled = false;
  }
  await refresh();
}

// --- filters and paging ------------------------------------------------------------------

function readFilters() {
  const requestedFrom = $("filter-from").value;
  const requestedTo = $("filter-to").value;
  if (requestedFrom && requestedTo && requestedFrom > requestedTo) { // yyyy-mm-dd sorts as text
    banner("The “Requested from” date is after the “Requested until” date.");
    return;
  }
  banner("");
  state.filters = {
    statuses: [...document.querySelectorAll("#status-filters input:checked")].map((i) => i.value),
    exportType: $("filter-type").value,
    requestedBy: isAdmin() ? $("filter-requester").value.trim() : "",
    requestedFrom,
    requestedTo,
  };
  state.page = 1;
  refresh();
}

// --- session -----------------------------------------------------------------------------

function enter(session) {
  state.session = session;
  const admin = isAdmin();
  document.body.classList.toggle("admin", admin);
  $("requester-field").hidden = !admin;
  $("list-heading").textContent = admin ? "All exports of your tenant" : "Your exports";
  $("who").textContent = `user ${session.userId}, tenant ${session.tenantId} (${session.appCode})${admin ? ", administrator" : ""}`;
  banner("");
  show("center");
  loadTypes();
  startProgress(pushed, setMode);
  refresh();
}

function leave() {
  state.session = null;
  stopProgress();
  clearTimeout(state.timer);
  drawn.clear();
  state.lastShown = [];
  $("tasks").tBodies[0].replaceChildren();
  $("who").textContent = "";
  if ($("drawer").open) $("drawer").close();
  show("sign-in");
  $("token").focus();
}

async function start() {
  whenSignedOut(leave);
  setUpDrawer();
  $("token-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const token = $("token").value.trim();
    $("token").value = "";
    try {
      enter(await signIn(token));
    } catch (error) {
      banner(error.message);
      $("token").focus();
    }
  });
  $("sign-out").addEventListener("click", async () => {
    try {
      await signOut();
      leave();
      banner("Signed out.", "info");
    } catch (error) {
      banner(error.message);
    }
  });
  $("create-form").addEventListener("submit", create);
  $("export-type").addEventListener("change", showTypeForm);
  $("filter-form").addEventListener("submit", (event) => {
    event.preventDefault();
    readFilters();
  });
  $("filter-form").addEventListener("change", (event) => {
    if (event.target.id !== "filter-requester") readFilters();
  });
  $("filter-form").addEventListener("reset", () => setTimeout(readFilters));
  $("newer").addEventListener("click", () => { state.page -= 1; refresh(); });
  $("older").addEventListener("click", () => { state.page += 1; refresh(); });
  let session = null;
  try {
    session = await currentSession();
  } catch (error) {
    banner(error.message);
  }
  if (session) enter(session);
  else show("sign-in");
}

start();
