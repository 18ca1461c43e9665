// The list's filters on the page: the filter form (read, set from the page's URL, cleared,
// its changes told) and the address bar (written). Plain functions over a filters object (filter-query.js,
// pure, turns them into queries); download-center.js keeps the page's state.
"use strict";

import { $, option } from "./dom.js";
import { activeFilters, readUrl, urlQuery } from "./filter-query.js";
import { t } from "./i18n.js";

/** ``{filters, page}`` from the page's URL, also set into the filter form (the type's
 * select is filled once the types are loaded). */
export function filtersFromUrl() {
  const read = readUrl(location.search);
  for (const box of $("status-filters").querySelectorAll("input")) {
    box.checked = read.filters.statuses.includes(box.value);
  }
  $("filter-from").value = read.filters.requestedFrom;
  $("filter-to").value = read.filters.requestedTo;
  $("filter-requester").value = read.filters.requestedBy;
  return read;
}

/** Put ``filters`` and ``page`` into the URL (no new history entry) and count them in the
 * filters' summary. */
export function writeUrl(filters, page) {
  const search = urlQuery(filters, page);
  history.replaceState(null, "", search ? `?${search}` : location.pathname);
  const on = activeFilters(filters);
  $("filters-summary").textContent = on ? t("filtersOn", { count: on }) : t("filters");
}

/** The filters the form shows, or ``null`` when its dates are the wrong way round. */
export function readFilterForm(admin) {
  const requestedFrom = $("filter-from").value;
  const requestedTo = $("filter-to").value;
  if (requestedFrom && requestedTo && requestedFrom > requestedTo) return null; // yyyy-mm-dd sorts as text
  return {
    statuses: [...$("status-filters").querySelectorAll("input:checked")].map((i) => i.value),
    exportType: $("filter-type").value,
    requestedBy: admin ? $("filter-requester").value.trim() : "",
    requestedFrom,
    requestedTo,
  };
}

/** Clear the filter form. */
export function clearFilterForm() {
  for (const box of $("status-filters").querySelectorAll("input")) box.checked = false;
  $("filter-type").value = "";
  $("filter-from").value = "";
  $("filter-to").value = "";
  $("filter-requester").value = "";
}

/** Offer the export types ``choices`` (``[exportType, display name]``) in the type filter,
 * after "Any"; ``selected`` stays selected. */
export function fillTypeFilter(choices, selected) {
  $("filter-type").replaceChildren(option("", t("any")), ...choices.map(([value, text]) => option(value, text)));
  $("filter-type").value = selected;
}

/** Show the requester filter to an administrator only. */
export function showRequesterFilter(admin) {
  $("requester-field").hidden = !admin;
}

/** Unfold the filters (``open``) or fold them away. */
export function unfoldFilters(open) {
  $("filters").open = open;
}

/** Set the requester filter to ``userId`` and unfold the filters (an administrator chose a
 * requester's name in the list). */
export function filterByRequester(userId) {
  $("filter-requester").value = String(userId);
  unfoldFilters(true);
}

/** Call ``onChange`` when the person changes the filters: on Apply, on any change but to
 * the requester field (its Apply, or Enter, applies it), and once the form is cleared. */
export function setUpFilters(onChange) {
  $("filter-form").addEventListener("submit", (event) => {
    event.preventDefault();
    onChange();
  });
  $("filter-form").addEventListener("change", (event) => {
    if (event.target.id !== "filter-requester") onChange();
  });
  $("filter-form").addEventListener("reset", () => setTimeout(onChange));
}
