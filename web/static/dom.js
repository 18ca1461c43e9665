// Small DOM helpers. Text from users and Providers (task names, messages) is only ever set
// with textContent, never parsed as HTML. Words and locale formats are in i18n.js.
"use strict";

export const $ = (id) => document.getElementById(id);

export function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}

export function button(text, className, label, onClick) {
  const node = el("button", text, className);
  node.type = "button";
  if (label) node.setAttribute("aria-label", label);
  node.addEventListener("click", onClick);
  return node;
}

export function option(value, text) {
  const node = el("option", text);
  node.value = value;
  return node;
}
