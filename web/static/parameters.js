// @ts-check
// The new-export form's parameter fields: built from the export type's declared parameters
// (GET /export-types: label, description, fixed values, bounds, texts per language), read
// back into the request's parameters object, and filled from an earlier export's
// parameters ("Edit and export again"). No page state: panel.js calls these.
"use strict";

import { ApiError } from "./client.js";
import { $, el, option } from "./dom.js";
import { language, t } from "./i18n.js";

/** @import { ChoiceValue, ParameterHint } from "./client.js" */

/** The kinds of <input> of the parameter types that have one of their own.
 * @type {Record<string, string>} */
const INPUT_TYPES = { date: "date", datetime: "datetime-local" };

/** ``texts[field]`` in the page's language, else the default ``fallback``.
 * @param {Record<string, Record<string, string>> | undefined} translations
 * @param {string} field
 * @param {string} fallback
 * @returns {string} */
export function localised(translations, field, fallback) {
  const own = translations && translations[language()];
  return (own && own[field]) || fallback;
}

/** @param {ChoiceValue} choice */
function valueLabel(choice) {
  return (choice.translations && choice.translations[language()]) || choice.label || choice.value;
}

/** The field of one declared parameter: its label, input and help.
 * @param {ParameterHint} hint */
function parameterField(hint) {
  const id = `param-${hint.name}`;
  const field = el("div", undefined, "field");
  const text = localised(hint.translations, "label", hint.label || hint.name);
  const label = el("label", text);
  label.htmlFor = id;
  if (!hint.required && hint.type !== "boolean") label.append(el("span", t("optional"), "optional"));
  let input;
  if (hint.type === "boolean") {
    input = el("input");
    input.type = "checkbox";
    field.classList.add("check");
  } else if (Array.isArray(hint.values) && hint.values.length) {
    input = el("select");
    if (!hint.required) input.append(option("", t("choose")));
    for (const choice of hint.values) input.append(option(choice.value, valueLabel(choice)));
    input.required = Boolean(hint.required);
  } else {
    input = el("input");
    const numeric = hint.type === "integer" || hint.type === "number";
    input.type = INPUT_TYPES[hint.type] || (numeric ? "number" : "text");
    if (hint.type === "integer") input.step = "1";
    if (hint.type === "number") input.step = "any";
    if (numeric) input.inputMode = hint.type === "integer" ? "numeric" : "decimal";
    if (hint.minimum !== null && hint.minimum !== undefined) input.min = String(hint.minimum);
    if (hint.maximum !== null && hint.maximum !== undefined) input.max = String(hint.maximum);
    input.required = Boolean(hint.required);
  }
  input.id = id;
  input.name = hint.name;
  input.dataset.type = hint.type || "string";
  input.dataset.label = text;
  field.append(label, input);
  const description = localised(hint.translations, "description", hint.description);
  if (description) {
    const help = el("small", description, "help");
    help.id = `${id}-help`;
    input.setAttribute("aria-describedby", help.id);
    field.append(help);
  }
  return field;
}

/** The parameter fields' inputs and selects, in order. */
function fields() {
  return [...$("parameter-fields").querySelectorAll("input, select")].filter(
    (node) => node instanceof HTMLInputElement || node instanceof HTMLSelectElement,
  );
}

/** Show the fields of the parameters ``hints`` declares (none: the fieldset is hidden).
 * @param {ParameterHint[]} hints */
export function showParameterFields(hints) {
  $("parameter-fields").replaceChildren(...hints.map(parameterField));
  $("parameters").hidden = hints.length === 0;
}

/** The first parameter field, or null when there is none. */
export function firstParameterField() {
  return fields()[0] || null;
}

function extraParameters() {
  return $("extra-parameters", HTMLTextAreaElement);
}

/** Empty "Other parameters" (the next export starts from an empty form). */
export function clearExtraParameters() {
  extraParameters().value = "";
}

/** The form's parameters, or throws ApiError naming the field that is wrong.
 * @returns {Record<string, unknown>} */
export function formParameters() {
  /** @type {Record<string, unknown>} */
  let parameters = {};
  const extra = extraParameters().value.trim();
  if (extra) {
    /** @type {unknown} */
    let parsed;
    try {
      parsed = JSON.parse(extra);
    } catch {
      throw new ApiError(t("badJson"));
    }
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
      throw new ApiError(t("notObject"));
    }
    parameters = /** @type {Record<string, unknown>} */ (parsed); // a JSON object
  }
  for (const input of fields()) {
    const type = input.dataset.type;
    const field = input.dataset.label;
    if (type === "boolean") {
      parameters[input.name] = input instanceof HTMLInputElement && input.checked;
      continue;
    }
    const text = input.value.trim();
    if (text === "") {
      if (input.required) throw new ApiError(t("required", { field }));
      continue;
    }
    if (type === "integer" || type === "number") {
      const value = Number(text);
      if (!Number.isFinite(value) || (type === "integer" && !Number.isInteger(value))) {
        throw new ApiError(t(type === "integer" ? "wholeNumber" : "number", { field }));
      }
      parameters[input.name] = value;
    } else {
      parameters[input.name] = text;
    }
  }
  return parameters;
}

/** Fill the fields from ``parameters`` (an earlier export's); keys without a field go to
 * "Other parameters" as JSON, so nothing of the earlier request is lost.
 * @param {Record<string, unknown> | null} parameters */
export function fillParameters(parameters) {
  const rest = { ...(parameters || {}) };
  for (const input of fields()) {
    if (!(input.name in rest)) continue;
    const value = rest[input.name];
    delete rest[input.name];
    if (input.dataset.type === "boolean" && input instanceof HTMLInputElement) input.checked = Boolean(value);
    else input.value = value === null ? "" : String(value);
  }
  extraParameters().value = Object.keys(rest).length ? JSON.stringify(rest) : "";
  const extra = extraParameters().closest("details");
  if (extra) extra.open = Object.keys(rest).length > 0;
}
