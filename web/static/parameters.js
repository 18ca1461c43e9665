// The new-export form's parameter fields: built from the export type's declared
// parameters (GET /export-types), and read back into the request's parameters object.
// No page state: download-center.js calls these.

import { ApiError } from "./api.js";
import { $, el } from "./format.js";

export function option(value, text) {
  const node = el("option", text);
  node.value = value;
  return node;
}

export function parameterField(hint) {
  const id = `param-${hint.name}`;
  const field = el("div", undefined, "field");
  const label = el("label", hint.name);
  label.htmlFor = id;
  if (!hint.required) label.append(el("span", " (optional)", "optional"));
  let input;
  if (hint.type === "boolean") {
    input = el("input");
    input.type = "checkbox";
    field.classList.add("check");
  } else {
    input = el("input");
    const numeric = hint.type === "integer" || hint.type === "number";
    input.type = numeric ? "number" : "text";
    if (hint.type === "integer") input.step = "1";
    if (hint.type === "number") input.step = "any";
    if (numeric) input.inputMode = hint.type === "integer" ? "numeric" : "decimal";
    input.required = Boolean(hint.required);
  }
  input.id = id;
  input.name = hint.name;
  input.dataset.type = hint.type || "string";
  field.append(label, input);
  if (hint.description) {
    const help = el("small", hint.description, "help");
    help.id = `${id}-help`;
    input.setAttribute("aria-describedby", help.id);
    field.append(help);
  }
  return field;
}

/** The form's parameters, or throws ApiError naming the field that is wrong. */
export function formParameters() {
  let parameters = {};
  const extra = $("extra-parameters").value.trim();
  if (extra) {
    try {
      parameters = JSON.parse(extra);
    } catch (error) {
      throw new ApiError(`Other parameters are not valid JSON: ${error.message}`);
    }
    if (parameters === null || typeof parameters !== "object" || Array.isArray(parameters)) {
      throw new ApiError('Other parameters must be a JSON object, e.g. {"status": "ACTIVE"}.');
    }
  }
  for (const input of $("parameter-fields").querySelectorAll("input")) {
    const type = input.dataset.type;
    if (type === "boolean") {
      parameters[input.name] = input.checked;
      continue;
    }
    const text = input.value.trim();
    if (text === "") {
      if (input.required) throw new ApiError(`${input.name} is required.`);
      continue;
    }
    if (type === "integer" || type === "number") {
      const value = Number(text);
      if (!Number.isFinite(value) || (type === "integer" && !Number.isInteger(value))) {
        throw new ApiError(`${input.name} must be ${type === "integer" ? "a whole number" : "a number"}.`);
      }
      parameters[input.name] = value;
    } else {
      parameters[input.name] = text;
    }
  }
  return parameters;
}
