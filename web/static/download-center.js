// @ts-check
// The download center page: the list of the caller's exports first (every requester's with
// platform:download:all), with live progress, filters kept in the URL, and paging; a
// "New export" panel built from the export types the caller may request; download,
// cancel, retry or "edit and export again", and each task's history. English or
// Simplified Chinese, from the browser or the page's switch. Plain DOM in ES modules, no
// framework, no build step (see web/page.py).
"use strict";

import { currentSession, listTasks, loadExportTypes, whenSignedOut } from "./client.js";
import {
  closeHistory,
  historyTaskChanged,
  openHistory,
  rewordDrawer,
  setUpDrawer,
  setViewer,
} from "./drawer.js";
import { announce, banner, reword, setUpBanner, showError } from "./banner.js";
import { setUpConfirm } from "./confirm.js";
import { finished, retitle, setUpNotices } from "./notices.js";
import { $, el, option } from "./dom.js";
import { download } from "./download.js";
import {
  formatNumber,
  isWord,
  language,
  LANGUAGES,
  noticeWords,
  preferredLanguage,
  t,
  tickTimes,
  useLanguage,
} from "./i18n.js";
import { activeFilters, listQuery, NO_FILTERS, PAGE_SIZE } from "./filter-query.js";
import {
  clearFilterForm,
  fillTypeFilter,
  filterByRequester,
  filtersFromUrl,
  readFilterForm,
  setUpFilters,
  showRequesterFilter,
  unfoldFilters,
  writeUrl,
} from "./filters.js";
import {
  closePanel,
  exportTypes,
  fillTypes,
  keepDraft,
  openPanel,
  reopenDraft,
  setUpPanel,
  typeName,
} from "./panel.js";
import { startProgress, stopProgress } from "./progress.js";
import { rowActions } from "./row-actions.js";
import { askToSignIn, rewordSignIn, setUpSignIn, showSection } from "./sign-in.js";
import { ACTIVE, progressStep, stateOf } from "./task-state.js";
import { describe, refocus, replaceRow, taskRow } from "./tasks.js";

/** @import { CreatedTask, ExportType, Session, Task, TaskPage } from "./client.js" */
/** @import { Filters } from "./filter-query.js" */
/** @import { Mode } from "./progress.js" */
/** @import { Actions } from "./tasks.js" */

const ADMIN_PERMISSION = "platform:download:all";
// List refresh periods, milliseconds: while a shown task is active and the stream is
// down; and while the stream is up, to pick up what it does not carry.
const ACTIVE_REFRESH_MS = 1000;
const IDLE_REFRESH_MS = 15000;
// Without the stream, a task created elsewhere shows up within this, milliseconds.
const POLL_IDLE_MS = 5000;
// A pushed change the list must show (new task, finished task) refreshes it this soon.
const PUSH_REFRESH_MS = 200;
// Relative times ("3 min ago") are brought up to date this often, milliseconds: often
// enough that "10 seconds ago" never reads for half a minute.
const CLOCK_MS = 5000;
// A row just created (or found a duplicate of) stays highlighted this long, milliseconds.
const HIGHLIGHT_MS = 8000;

/**
 * @typedef {object} PageState
 * @property {Session | null} session  The signed-in user; null while signed out.
 * @property {number} page  The list's page, from 1.
 * @property {Filters} filters
 * @property {ReturnType<typeof setTimeout> | null} timer  The list's next refresh.
 * @property {Mode} mode  How progress arrives.
 * @property {TaskPage | null} lastData  The list's last answer, drawn again on a redraw.
 * @property {Task[]} lastShown  The tasks shown, with what the stream pushed since.
 * @property {Set<string>} highlight  Ids of the rows highlighted after a create.
 */
/** @type {PageState} */
const state = {
  session: null,
  page: 1,
  filters: { ...NO_FILTERS, statuses: [] },
  timer: null,
  mode: "polling",
  lastData: null,
  lastShown: [],
  highlight: new Set(),
};

// Rows by task id with the task they were drawn from: an update redraws only the rows
// that changed, so a button under the pointer or the keyboard focus is not replaced.
/** @type {Map<string, {json: string, tr: HTMLTableRowElement, task: Task}>} */
const drawn = new Map();

// --- words -------------------------------------------------------------------------------

/** The page's word ``key`` (an element's data-i18n), or the key itself when the page has
 * no such word.
 * @param {string} key */
function word(key) {
  return isWord(key) ? t(key) : key;
}

/** Put the page's words of the current language into every marked element. */
function applyWords() {
  for (const node of document.querySelectorAll("[data-i18n]")) {
    node.textContent = word(node.getAttribute("data-i18n") || "");
  }
  for (const node of document.querySelectorAll("[data-i18n-label]")) {
    node.setAttribute("aria-label", word(node.getAttribute("data-i18n-label") || ""));
  }
  rewordDrawer();
  rewordSignIn();
  retitle();
  $("language", HTMLSelectElement).value = language();
  reword();
  if (state.session) enterWords();
}

function isAdmin() {
  return Boolean(state.session && (state.session.perms || []).includes(ADMIN_PERMISSION));
}

// --- the list ----------------------------------------------------------------------------

// ``only`` (filter by a requester's name) is an administrator's: set on sign-in.
/** @type {Actions} */
const actions = {
  download,
  ...rowActions({ refresh, drawnRow: (id) => drawn.get(id) }),
  edit,
  only: null,
  history: openHistory,
};

/** The row for ``task``: the drawn one when nothing changed, else a new one.
 * @param {Task} task */
function rowFor(task) {
  const json = JSON.stringify(task);
  const kept = drawn.get(task.id);
  if (kept && kept.json === json) return kept.tr;
  if (kept && (stateOf(kept.task) !== stateOf(task) || progressStep(kept.task) !== progressStep(task))) {
    announce(describe(task));
  }
  if (kept) historyTaskChanged(task); // an open drawer on it reloads its events
  if (kept && ACTIVE.has(kept.task.status) && !ACTIVE.has(task.status)) {
    finished(task, task.taskName);
  }
  const tr = taskRow(task, actions, typeName);
  if (state.highlight.has(task.id)) tr.classList.add("highlight");
  drawn.set(task.id, { json, tr, task });
  return tr;
}

/** Draw a page of the list, keeping the rows that did not change and the focus.
 * @param {TaskPage} data */
function render(data) {
  const past = Math.max(1, Math.ceil(Number(data.total) / PAGE_SIZE));
  if (data.items.length === 0 && !data.totalCapped && Number(data.total) > 0 && state.page > past) {
    state.page = past; // a page past the end (an old link): its last page instead
    refresh();
    return;
  }
  state.lastData = data;
  const body = $("tasks", HTMLTableElement).tBodies[0];
  const rows = data.items.map(rowFor);
  const shown = new Set(data.items.map((x) => x.id));
  for (const id of drawn.keys()) if (!shown.has(id)) drawn.delete(id);
  if (rows.length !== body.rows.length || rows.some((tr, i) => body.rows[i] !== tr)) {
    const focused = body.contains(document.activeElement) ? document.activeElement : null;
    const focusedRow = focused && focused.closest("tr");
    body.replaceChildren(...rows);
    if (focused && focusedRow && !focusedRow.isConnected) {
      const again = rows.find((tr) => tr.dataset.taskId === focusedRow.dataset.taskId);
      if (again) refocus(again, focused);
    }
  }
  if (data.items.length === 0) {
    const empty = el("td", activeFilters(state.filters) > 0 ? t("emptyFiltered") : t("empty"));
    empty.colSpan = 7;
    const tr = el("tr", undefined, "empty");
    tr.append(empty);
    body.replaceChildren(tr);
  }
  state.lastShown = data.items;
  const total = Number(data.total);
  $("total").textContent = data.totalCapped
    ? t("totalMore", { count: formatNumber(total) })
    : total === 1 ? t("totalOne") : t("total", { count: formatNumber(total) });
  const pages = Math.max(1, Math.ceil(total / PAGE_SIZE));
  $("page-label").textContent = data.totalCapped
    ? t("pageMany", { page: state.page })
    : t("page", { page: state.page, pages });
  $("newer", HTMLButtonElement).disabled = state.page <= 1;
  $("older", HTMLButtonElement).disabled = !data.totalCapped && state.page >= pages;
  // Why new exports wait, in the person's words (the service's English if it has none).
  const waiting = $("waiting");
  waiting.textContent = data.waiting
    ? noticeWords(data.waiting.reason) || data.waiting.message
    : "";
  waiting.hidden = !data.waiting;
}

/** Draw every row again (a new language, or relative times moved on). */
function redraw() {
  drawn.clear();
  if (state.lastData) render(state.lastData);
}

/** A task the stream pushed: redraw its row if shown; refresh the list if it must change.
 * @param {Task} task */
function pushed(task) {
  const kept = drawn.get(task.id);
  if (!kept) {
    if (state.page === 1) schedule(PUSH_REFRESH_MS); // a new task, maybe on this page
    return;
  }
  const merged = { ...kept.task, ...task };
  const tr = rowFor(merged);
  if (tr !== kept.tr && kept.tr.isConnected) replaceRow(kept.tr, tr);
  state.lastShown = state.lastShown.map((x) => (x.id === merged.id ? merged : x));
  if (!ACTIVE.has(merged.status)) schedule(PUSH_REFRESH_MS); // totals, filters, order
}

/** How soon to refresh the list again, milliseconds. The stream carries every live task
 * the caller sees (an administrator's too), so while it is up the list is only refreshed
 * to pick up what the stream does not carry (another tab's new export, an expiry). */
function nextRefresh() {
  if (state.mode === "live") return IDLE_REFRESH_MS;
  return state.lastShown.some((x) => ACTIVE.has(x.status)) ? ACTIVE_REFRESH_MS : POLL_IDLE_MS;
}

/** Refresh the list in ``ms`` milliseconds (instead of when it was due).
 * @param {number} ms */
function schedule(ms) {
  if (state.timer !== null) clearTimeout(state.timer);
  state.timer = setTimeout(refresh, ms);
}

/** Load the list's page again, and schedule the next refresh. */
async function refresh() {
  if (state.timer !== null) clearTimeout(state.timer);
  state.timer = null;
  if (!state.session) return;
  writeUrl(state.filters, state.page);
  try {
    render(await listTasks(listQuery(state.filters, state.page, isAdmin())));
  } catch (error) {
    showError(error);
  }
  if (state.session && state.timer === null) schedule(nextRefresh());
}

/** @param {Mode} mode */
function setMode(mode) {
  state.mode = mode;
  const node = $("updates");
  node.dataset.mode = mode;
  node.textContent = t(mode);
  if (mode === "polling" && state.session) schedule(ACTIVE_REFRESH_MS);
}

// --- the new-export panel ----------------------------------------------------------------

/** Load the export types the caller may request, and offer them. */
async function loadTypes() {
  /** @type {ExportType[]} */
  let loaded = [];
  try {
    loaded = await loadExportTypes();
  } catch (error) {
    showError(error);
  }
  showTypes(loaded);
  redraw(); // type names in the rows
  if (reopenDraft()) banner(() => t("draftKept"), "info");
}

/** Offer the ``loaded`` types (or the current ones again) in the page's language, in the
 * panel and in the type filter.
 * @param {ExportType[]} [loaded] */
function showTypes(loaded = exportTypes()) {
  fillTypes(loaded);
  /** @type {[string, string][]} */
  const choices = exportTypes().map((x) => [x.exportType, typeName(x.exportType)]);
  fillTypeFilter(choices, state.filters.exportType);
}

/** "Edit and export again": the panel, filled from ``task``.
 * @param {Task} task */
function edit(task) {
  openPanel(task);
}

/** Highlight the row of ``taskId`` and bring it into view (after a create).
 * @param {string} taskId */
function spotlight(taskId) {
  state.highlight.add(taskId);
  const kept = drawn.get(taskId);
  if (kept && kept.tr.isConnected) {
    kept.tr.classList.add("highlight");
    kept.tr.scrollIntoView({ block: "center" });
  }
  setTimeout(() => {
    state.highlight.delete(taskId);
    const row = drawn.get(taskId);
    if (row) row.tr.classList.remove("highlight");
  }, HIGHLIGHT_MS);
}

/** An export was created from the panel (or found to be a duplicate): say so, and show it
 * at the top of the list, unfiltered.
 * @param {CreatedTask} task */
async function created(task) {
  banner(() => t(task.duplicate ? "duplicate" : "accepted", { name: task.taskName }), "info");
  if (activeFilters(state.filters) > 0 || state.page !== 1) {
    // The new row may be filtered out: show it unfiltered, at the top.
    state.filters = { ...NO_FILTERS, statuses: [] };
    clearFilterForm();
  }
  state.page = 1;
  await refresh();
  spotlight(task.id);
}

// --- filters and paging ------------------------------------------------------------------

/** Show the list as the filter form says, from its first page. */
function readFilters() {
  const filters = readFilterForm(isAdmin());
  if (filters === null) {
    banner(() => t("badDates"));
    return;
  }
  banner("");
  state.filters = filters;
  state.page = 1;
  refresh();
}

/** Show only the exports of requester ``userId`` (an administrator chose a name).
 * @param {string} userId */
function only(userId) {
  filterByRequester(userId);
  readFilters();
}

// --- session -----------------------------------------------------------------------------

/** The signed-in page's words in the current language. */
function enterWords() {
  const session = state.session;
  if (!session) return;
  const admin = isAdmin();
  $("list-heading").textContent = admin ? t("listAll") : t("listMine");
  const who = session.name || t("user", { id: session.userId });
  $("who").textContent = t(admin ? "whoAdmin" : "who", { name: who });
  setMode(state.mode);
  if (exportTypes().length) showTypes();
  writeUrl(state.filters, state.page);
  redraw();
}

/** Show the download center to ``session``'s user.
 * @param {Session} session */
function enter(session) {
  state.session = session;
  const admin = isAdmin();
  actions.only = admin ? only : null;
  setViewer(session.userId);
  document.body.classList.toggle("admin", admin);
  showRequesterFilter(admin);
  banner("");
  showSection("center");
  enterWords();
  // Closed unless a filter is on (its summary counts them): the list comes first.
  unfoldFilters(activeFilters(state.filters) > 0);
  loadTypes();
  startProgress(pushed, setMode);
  refresh();
}

/** Back to the sign-in form (signed out, or the session ended). */
function leave() {
  state.session = null;
  stopProgress();
  if (state.timer !== null) clearTimeout(state.timer);
  drawn.clear();
  state.lastShown = [];
  state.lastData = null;
  $("tasks", HTMLTableElement).tBodies[0].replaceChildren();
  $("who").textContent = "";
  closeHistory();
  closePanel();
  askToSignIn();
}

/** The server says the session has ended: keep the new export's input, then sign in. */
function sessionEnded() {
  keepDraft();
  leave();
  banner(() => t("sessionEnded"), "error");
}

async function start() {
  await useLanguage(preferredLanguage());
  $("language").replaceChildren(...Object.entries(LANGUAGES).map(([tag, name]) => {
    const node = option(tag, name);
    node.lang = tag;
    return node;
  }));
  applyWords();
  ({ filters: state.filters, page: state.page } = filtersFromUrl());
  whenSignedOut(sessionEnded);
  setUpBanner();
  setUpDrawer();
  setUpConfirm();
  setUpNotices(spotlight);
  setUpPanel(created);
  setUpFilters(readFilters);
  await setUpSignIn((session) => {
    enter(session);
    $("list-heading").focus(); // the keyboard starts at the list, not the page's top
  }, leave);
  const languages = $("language", HTMLSelectElement);
  languages.addEventListener("change", async () => {
    await useLanguage(languages.value, true);
    applyWords();
  });
  $("newer").addEventListener("click", () => { state.page -= 1; refresh(); });
  $("older").addEventListener("click", () => { state.page += 1; refresh(); });
  setInterval(() => tickTimes(), CLOCK_MS);
  /** @type {Session | null} */
  let session = null;
  try {
    session = await currentSession();
  } catch (error) {
    showError(error);
  }
  if (session) enter(session);
  else askToSignIn();
}

start();
