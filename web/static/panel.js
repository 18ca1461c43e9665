// The new-export panel: the export types the caller may request (GET /export-types) in the
// person's language, the form built from the chosen type, its error line, and opening it
// empty or filled from an earlier export ("Edit and export again"). download-center.js
// submits it.
"use strict";

import { $ } from "./dom.js";
import { formatNumber, language, t } from "./i18n.js";
import { fillParameters, localised, option, parameterField } from "./parameters.js";

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
export function showTypeForm() {
  const type = chosenType();
  $("parameter-fields").replaceChildren(...(type ? type.parameters.map(parameterField) : []));
  $("parameters").hidden = !type || type.parameters.length === 0;
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

/** Take the loaded ``loaded`` types (or keep the current ones) and fill the panel's and the
 * filter's type selects in the page's language; ``filterType`` stays selected. */
export function fillTypes(filterType, loaded = types) {
  types = loaded;
  const chosen = $("export-type").value;
  const choices = types.map((x) => option(x.exportType, typeName(x.exportType)));
  $("export-type").replaceChildren(...choices);
  if (chosen) $("export-type").value = chosen;
  $("filter-type").replaceChildren(option("", t("any")), ...choices.map((o) => o.cloneNode(true)));
  $("filter-type").value = filterType;
  $("create").disabled = types.length === 0;
  $("new-export").disabled = types.length === 0;
  showTypeForm();
}

/** The panel's error: the words, with the service's own message folded under Details. */
export function formError(message, detail = "") {
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
  const first = task ? $("parameter-fields").querySelector("input, select") || $("task-name") : null;
  (first || $("export-type")).focus();
}
