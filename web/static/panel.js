// @ts-check
// The new-export panel: the export types the caller may request (GET /export-types) in the
// person's language, the form built from the chosen type, its error line, opening it empty
// or filled from an earlier export ("Edit and export again"), and submitting it
// (POST /export-tasks). download-center.js is told of each export created.
"use strict";

import { ApiError, createTask, messageOf } from "./client.js";
import { $, option } from "./dom.js";
import { formatNumber, language, refusalWords, t } from "./i18n.js";
import {
  clearExtraParameters,
  fillParameters,
  firstParameterField,
  formParameters,
  localised,
  showParameterFields,
} from "./parameters.js";

/** @import { CreatedTask, ExportType, NewTask, Task } from "./client.js" */

/** @type {ExportType[]} */
let types = [];

/** The panel's elements. */
const panel = {
  dialog: () => $("new-export-panel", HTMLDialogElement),
  type: () => $("export-type", HTMLSelectElement),
  name: () => $("task-name", HTMLInputElement),
  format: () => $("format", HTMLSelectElement),
  create: () => $("create", HTMLButtonElement),
  opener: () => $("new-export", HTMLButtonElement),
};

/** The types the caller may request, as loaded. */
export function exportTypes() {
  return types;
}

/** The display name of ``exportType`` in the page's language (the key when unknown).
 * @param {string} exportType
 * @returns {string} */
export function typeName(exportType) {
  const type = types.find((x) => x.exportType === exportType);
  return type ? localised(type.translations, "displayName", type.displayName) : exportType;
}

function chosenType() {
  return types.find((x) => x.exportType === panel.type().value);
}

/** Build the form for the chosen type: its fields, formats and hint (its limit once). */
function showTypeForm() {
  const type = chosenType();
  showParameterFields(type ? type.parameters : []);
  const formats = type ? type.formats : [];
  panel.format().replaceChildren(...formats.map((f) => option(f, f)));
  const hints = [];
  if (type) {
    const description = localised(type.translations, "description", type.description);
    if (description) hints.push(description);
    if (type.maxRows) hints.push(t("atMostRows", { rows: formatNumber(type.maxRows) }));
  } else if (types.length === 0) {
    hints.push(t("noTypes"));
  }
  $("type-hint").textContent = hints.join(language() === "en" ? " " : "");
}

/** Take the loaded ``loaded`` types (or keep the current ones) and fill the panel's type
 * select in the page's language.
 * @param {ExportType[]} [loaded] */
export function fillTypes(loaded = types) {
  types = loaded;
  const select = panel.type();
  const chosen = select.value;
  select.replaceChildren(...types.map((x) => option(x.exportType, typeName(x.exportType))));
  if (chosen) select.value = chosen;
  panel.create().disabled = types.length === 0;
  panel.opener().disabled = types.length === 0;
  showTypeForm();
}

/** The panel's error: the words, with the service's own message folded under Details.
 * @param {string} message
 * @param {string} [detail] */
function formError(message, detail = "") {
  $("form-error-text").textContent = message || "";
  $("form-error-detail").textContent = detail;
  $("form-error-details").hidden = !detail || detail === message;
  $("form-error").hidden = !message;
}

/** The form was last filled from an earlier export ("Edit and export again"). */
let filledFromTask = false;

/** Empty the form: no name, the chosen type's fields empty, no extra parameters. */
function emptyForm() {
  panel.name().value = "";
  clearExtraParameters();
  showTypeForm();
}

/** Open the panel, filled from ``task`` ("Edit and export again"), or for a new export:
 * as the person left it, unless it was last filled from an earlier export, which a new
 * export does not start from.
 * @param {Task | null} [task] */
export function openPanel(task = null) {
  formError("");
  if (!task && filledFromTask) emptyForm();
  filledFromTask = Boolean(task);
  if (task && types.some((x) => x.exportType === task.exportType)) {
    panel.type().value = task.exportType;
    showTypeForm();
    panel.name().value = task.taskName || "";
    fillParameters(task.parameters);
  }
  const dialog = panel.dialog();
  if (!dialog.open) dialog.showModal();
  const first = task ? firstParameterField() || panel.name() : null;
  (first || panel.type()).focus();
}

/** Where the form's input waits while the person signs in again (this tab only). */
const DRAFT_KEY = "export-center-draft";

/** The session ended with the panel open: keep what the person typed, field by field (a
 * half-typed value too), for :func:`reopenDraft` after they sign in again. */
export function keepDraft() {
  if (!panel.dialog().open) return;
  /** @type {Record<string, string>} */
  const fields = {};
  for (const node of $("create-form", HTMLFormElement).elements) {
    if (node.id && "value" in node && typeof node.value === "string") fields[node.id] = node.value;
  }
  sessionStorage.setItem(DRAFT_KEY, JSON.stringify(fields));
}

/** Open the panel as :func:`keepDraft` left it, once; false when nothing was kept. */
export function reopenDraft() {
  const kept = sessionStorage.getItem(DRAFT_KEY);
  if (kept === null) return false;
  sessionStorage.removeItem(DRAFT_KEY);
  /** @type {Record<string, string>} */
  let fields;
  try {
    fields = JSON.parse(kept);
  } catch {
    return false;
  }
  formError("");
  const type = fields[panel.type().id];
  if (type && types.some((x) => x.exportType === type)) {
    panel.type().value = type;
    showTypeForm(); // the type's own fields, then their values
  }
  for (const node of $("create-form", HTMLFormElement).elements) {
    const value = fields[node.id];
    if (node.id && value !== undefined && node !== panel.type() && "value" in node) {
      node.value = value;
    }
  }
  const dialog = panel.dialog();
  if (!dialog.open) dialog.showModal();
  (firstParameterField() || panel.name()).focus();
  return true;
}

/** Close the panel if it is open (sign-out). */
export function closePanel() {
  const dialog = panel.dialog();
  if (dialog.open) dialog.close();
}

/** Create the export the form describes; on success close the panel, empty the form and
 * give the task to ``onCreated``.
 * @param {SubmitEvent} event
 * @param {(task: CreatedTask) => Promise<void>} onCreated */
async function submit(event, onCreated) {
  event.preventDefault();
  let parameters;
  try {
    parameters = formParameters();
  } catch (error) {
    formError(messageOf(error));
    return;
  }
  const exportType = panel.type().value;
  /** @type {NewTask} */
  const body = {
    exportType,
    format: panel.format().value || "XLSX",
    parameters,
    // Unnamed, an export is called by its type's name in the person's language (the file
    // name too), not by the registry key the API would use.
    taskName: panel.name().value.trim() || typeName(exportType),
  };
  panel.create().disabled = true;
  let task = null;
  try {
    task = await createTask(body);
  } catch (error) {
    if (error instanceof ApiError) {
      formError((error.code && refusalWords(error.code)) || error.message, error.detail);
    } else {
      formError(messageOf(error));
    }
  } finally {
    panel.create().disabled = false;
  }
  if (!task) return;
  panel.dialog().close();
  // The next export starts from an empty form, not this one's filters.
  emptyForm();
  filledFromTask = false;
  await onCreated(task);
}

/** Wire the panel's controls: "New export" opens it, Close closes it (the focus goes back
 * to "New export"), a new type rebuilds the form, and submitting it creates the export;
 * ``onCreated(task)`` then shows it.
 * @param {(task: CreatedTask) => Promise<void>} onCreated */
export function setUpPanel(onCreated) {
  panel.opener().addEventListener("click", () => openPanel());
  $("new-export-close").addEventListener("click", () => panel.dialog().close());
  panel.dialog().addEventListener("close", () => panel.opener().focus());
  $("create-form", HTMLFormElement).addEventListener("submit", (event) => submit(event, onCreated));
  panel.type().addEventListener("change", showTypeForm);
}
