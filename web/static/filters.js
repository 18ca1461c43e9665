// @ts-check
// The list's filters on the page: the filter form (read, set from the page's URL, cleared,
// its changes told) and the address bar (written). Plain functions over a filters object
// (filter-query.js, pure, turns them into queries); download-center.js keeps the page's
// state.
"use strict";

import { $, option } from "./dom.js";
import { activeFilters, readUrl, urlQuery } from "./filter-query.js";
import { t } from "./i18n.js";

/** @import { Filters } from "./filter-query.js" */

/** The filter form's fields. */
const field = {
  from: () => $("filter-from", HTMLInputElement),
  to: () => $("filter-to", HTMLInputElement),
  requester: () => $("filter-requester", HTMLInputElement),
  type: () => $("filter-type", HTMLSelectElement),
  statuses: () => $("status-filters").querySelectorAll("input"),
};

/** ``{filters, page}`` from the page's URL, also set into the filter form (the type's
 * select is filled once the types are loaded). */
export function filtersFromUrl() {
  const read = readUrl(location.search);
  for (const box of field.statuses()) box.checked = read.filters.statuses.includes(box.value);
  field.from().value = read.filters.requestedFrom;
  field.to().value = read.filters.requestedTo;
  field.requester().value = read.filters.requestedBy;
  return read;
}

/** Put ``filters`` and ``page`` into the URL (no new history entry) and count them in the
 * filters' summary.
 * @param {Filters} filters
 * @param {number} page */
export function writeUrl(filters, page) {
  const search = urlQuery(filters, page);
  history.replaceState(null, "", search ? `?${search}` : location.pathname);
  const on = activeFilters(filters);
  $("filters-summary").textContent = on ? t("filtersOn", { count: on }) : t("filters");
}

/** The filters the form shows (the requester's for an ``admin`` only), or ``null`` when
 * its dates are the wrong way round.
 * @param {boolean} admin
 * @returns {Filters | null} */
export function readFilterForm(admin) {
  const requestedFrom = field.from().value;
  const requestedTo = field.to().value;
  if (requestedFrom && requestedTo && requestedFrom > requestedTo) return null; // yyyy-mm-dd sorts as text
  return {
    statuses: [...field.statuses()].filter((i) => i.checked).map((i) => i.value),
    exportType: field.type().value,
    requestedBy: admin ? field.requester().value.trim() : "",
    requestedFrom,
    requestedTo,
  };
}

/** Clear the filter form. */
export function clearFilterForm() {
  for (const box of field.statuses()) box.checked = false;
  for (const input of [field.type(), field.from(), field.to(), field.requester()]) input.value = "";
}

/** Offer the export types ``choices`` (``[exportType, display name]``) in the type filter,
 * after "Any"; ``selected`` stays selected.
 * @param {[string, string][]} choices
 * @param {string} selected */
export function fillTypeFilter(choices, selected) {
  const select = field.type();
  select.replaceChildren(option("", t("any")), ...choices.map(([value, text]) => option(value, text)));
  select.value = selected;
}

/** Show the requester filter to an ``admin`` only.
 * @param {boolean} admin */
export function showRequesterFilter(admin) {
  $("requester-field").hidden = !admin;
}

/** Unfold the filters (``open``) or fold them away.
 * @param {boolean} open */
export function unfoldFilters(open) {
  $("filters", HTMLDetailsElement).open = open;
}

/** Set the requester filter to ``userId`` and unfold the filters (an administrator chose a
 * requester's name in the list).
 * @param {string} userId */
export function filterByRequester(userId) {
  field.requester().value = userId;
  unfoldFilters(true);
}

/** Call ``onChange`` when the person changes the filters: on Apply, on any change but to
 * the requester field (its Apply, or Enter, applies it), and once the form is cleared.
 * @param {() => void} onChange */
export function setUpFilters(onChange) {
  const form = $("filter-form", HTMLFormElement);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    onChange();
  });
  form.addEventListener("change", (event) => {
    if (event.target !== field.requester()) onChange();
  });
  form.addEventListener("reset", () => setTimeout(onChange));
}
