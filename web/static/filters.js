// The list's filters on the page: the filter form (read, set from the page's URL, cleared)
// and the address bar (written). Plain functions over a filters object (filter-query.js,
// pure, turns them into queries); download-center.js keeps the page's state.
"use strict";

import { $ } from "./dom.js";
import { activeFilters, readUrl, urlQuery } from "./filter-query.js";
import { t } from "./i18n.js";

/** ``{filters, page}`` from the page's URL, also set into the filter form (the type's
 * select is filled once the types are loaded). */
export function filtersFromUrl() {
  const read = readUrl(location.search);
  for (const box of document.querySelectorAll("#status-filters input")) {
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
    statuses: [...document.querySelectorAll("#status-filters input:checked")].map((i) => i.value),
    exportType: $("filter-type").value,
    requestedBy: admin ? $("filter-requester").value.trim() : "",
    requestedFrom,
    requestedTo,
  };
}

/** Clear the filter form. */
export function clearFilterForm() {
  for (const box of document.querySelectorAll("#status-filters input")) box.checked = false;
  for (const id of ["filter-type", "filter-from", "filter-to", "filter-requester"]) $(id).value = "";
}
