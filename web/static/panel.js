// The new-export panel: the export types the caller may request (GET /export-types) in the
// person's language, the form built from the chosen type, its error line, opening it empty
// or filled from an earlier export ("Edit and export again"), and submitting it
// (POST /export-tasks). download-center.js is told of each export created.
"use strict";

import { postJson, TASKS } from "./client.js";
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

let types = [];

/** The types the caller may request, as loaded. */
export function exportTypes() {
  return types;
}

/** The display name of ``exportType`` in the page's language (the key when unknown). */
export function typeName(exportType) {
  const type = types.find((x) => x.exportType === exportType);
  return type ? localised(type.translations, "displayName", type.displayName) : exportType;
}

function chosenType() {
  return types.find((x) => x.exportType === $("export-type").value);
}

/** Build the form for the chosen type: its fields, formats and hint (its limit once). */
function showTypeForm() {
  const type = chosenType();
  showParameterFields(type ? type.parameters : []);
  const formats = type ? type.formats : [];
  $("format").replaceChildren(...formats.map((f) => option(f, f)));
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
 * select in the page's language. */
export function fillTypes(loaded = types) {
  types = loaded;
  const chosen = $("export-type").value;
  $("export-type").replaceChildren(...types.map((x) => option(x.exportType, typeName(x.exportType))));
  if (chosen) $("export-type").value = chosen;
  $("create").disabled = types.length === 0;
  $("new-export").disabled = types.length === 0;
  showTypeForm();
}

/** The panel's error: the words, with the service's own message folded under Details. */
function formError(message, detail = "") {
  $("form-error-text").textContent = message || "";
  $("form-error-detail").textContent = detail;
  $("form-error-details").hidden = !detail || detail === message;
  $("form-error").hidden = !message;
}

/** Open the panel, empty, or filled from ``task`` ("Edit and export again"). */
export function openPanel(task = null) {
  formError("");
  if (task && types.some((x) => x.exportType === task.exportType)) {
    $("export-type").value = task.exportType;
    showTypeForm();
    $("task-name").value = task.taskName || "";
    fillParameters(task.parameters);
  }
  const panel = $("new-export-panel");
  if (!panel.open) panel.showModal();
  const first = task ? firstParameterField() || $("task-name") : null;
  (first || $("export-type")).focus();
}

/** Close the panel if it is open (sign-out). */
export function closePanel() {
  if ($("new-export-panel").open) $("new-export-panel").close();
}

/** Create the export the form describes; on success close the panel, empty the form and
 * give the task to ``onCreated``. */
async function submit(event, onCreated) {
  event.preventDefault();
  let parameters;
  try {
    parameters = formParameters();
  } catch (error) {
    formError(error.message);
    return;
  }
  const body = { exportType: $("export-type").value, format: $("format").value || "XLSX", parameters };
  // Unnamed, an export is called by its type's name in the person's language (the file
  // name too), not by the registry key the API would use.
  body.taskName = $("task-name").value.trim() || typeName(body.exportType);
  $("create").disabled = true;
  let task = null;
  try {
    task = await postJson(TASKS, body);
  } catch (error) {
    formError((error.code && refusalWords(error.code)) || error.message, error.detail);
  } finally {
    $("create").disabled = false;
  }
  if (!task) return;
  $("new-export-panel").close();
  // The next export starts from an empty form, not this one's filters.
  $("task-name").value = "";
  clearExtraParameters();
  showTypeForm();
  await onCreated(task);
}

/** Wire the panel's controls: "New export" opens it, Close closes it (the focus goes back
 * to "New export"), a new type rebuilds the form, and submitting it creates the export;
 * ``onCreated(task)`` then shows it. */
export function setUpPanel(onCreated) {
  $("new-export").addEventListener("click", () => openPanel());
  $("new-export-close").addEventListener("click", () => $("new-export-panel").close());
  $("new-export-panel").addEventListener("close", () => $("new-export").focus());
  $("create-form").addEventListener("submit", (event) => submit(event, onCreated));
  $("export-type").addEventListener("change", showTypeForm);
}
