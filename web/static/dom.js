// @ts-check
// Small DOM helpers. Text from users and Providers (task names, messages) is only ever set
// with textContent, never parsed as HTML. Words and locale formats are in i18n.js.
//
// Each id of the page is looked up by one module only, the one that owns its element
// (tests/web/static/dom-ids.test.mjs checks it): the others call that module's functions.
"use strict";

/**
 * The page's element ``id``, of the class ``kind`` (HTMLElement unless told): both are
 * checked, so a missing element or one of another kind fails here, by its id.
 * @template {HTMLElement} [T=HTMLElement]
 * @param {string} id
 * @param {{new (): T, prototype: T}} [kind]
 * @returns {T}
 */
export function $(id, kind) {
  const node = document.getElementById(id);
  const want = kind || HTMLElement;
  if (!(node instanceof want)) throw new TypeError(`#${id} is not a ${want.name} of the page`);
  return /** @type {T} */ (node);
}

/**
 * A new ``tag`` element with ``text`` (as text) and ``className``.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {unknown} [text]
 * @param {string} [className]
 * @returns {HTMLElementTagNameMap[K]}
 */
export function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}

/**
 * A button (not a submit button) labelled ``label`` for screen readers when given.
 * @param {string} text
 * @param {string} className
 * @param {string} label
 * @param {(event: MouseEvent) => void} onClick
 * @returns {HTMLButtonElement}
 */
export function button(text, className, label, onClick) {
  const node = el("button", text, className);
  node.type = "button";
  if (label) node.setAttribute("aria-label", label);
  node.addEventListener("click", onClick);
  return node;
}

/**
 * An <option> of ``value`` reading ``text``.
 * @param {string} value
 * @param {string} text
 * @returns {HTMLOptionElement}
 */
export function option(value, text) {
  const node = el("option", text);
  node.value = value;
  return node;
}
