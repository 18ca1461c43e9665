// The list's filters: read from and written to the page's URL (a reload or a shared link
// keeps them), read from and cleared in the filter form, and turned into the list's query.
// Plain functions over a filters object; download-center.js keeps the page's state.
"use strict";

import { $ } from "./dom.js";
import { t } from "./i18n.js";

export const PAGE_SIZE = 20;
export const NO_FILTERS = Object.freeze({
  statuses: [],
  exportType: "",
  requestedBy: "",
  requestedFrom: "",
  requestedTo: "",
});
const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** How many filters are on. */
export function activeFilters(f) {
  return [f.statuses.length > 0, f.exportType, f.requestedBy, f.requestedFrom, f.requestedTo]
    .filter(Boolean).length;
}

/** The start of the local day ``date`` (yyyy-mm-dd) plus ``days``, as an ISO-8601 UTC
 * time: the person means their own calendar day, the API takes instants. */
function dayStart(date, days = 0) {
  const [year, month, day] = date.split("-").map(Number);
  return new Date(year, month - 1, day + days).toISOString();
}

/** The list request's query for ``filters`` and ``page``; ``admin`` may filter by requester. */
export function listQuery(filters, page, admin) {
  const query = new URLSearchParams({ page, pageSize: PAGE_SIZE });
  for (const status of filters.statuses) query.append("status", status);
  if (filters.exportType) query.set("exportType", filters.exportType);
  if (filters.requestedBy && admin) query.set("requestedBy", filters.requestedBy);
  // requestedTo is exclusive: the day after the last day asked for, at its start.
  if (filters.requestedFrom) query.set("requestedFrom", dayStart(filters.requestedFrom));
  if (filters.requestedTo) query.set("requestedTo", dayStart(filters.requestedTo, 1));
  return query;
}

/** ``{filters, page}`` from the page's URL, also set into the filter form (the type's
 * select is filled once the types are loaded). Values that are not well formed are left
 * out, not trusted. */
export function readUrl() {
  const query = new URLSearchParams(location.search);
  const statuses = query.getAll("status").filter((s) => /^[A-Z]+$/.test(s));
  const filters = {
    statuses,
    exportType: query.get("type") || "",
    requestedBy: /^\d+$/.test(query.get("by") || "") ? query.get("by") : "",
    requestedFrom: DATE.test(query.get("from") || "") ? query.get("from") : "",
    requestedTo: DATE.test(query.get("to") || "") ? query.get("to") : "",
  };
  const page = Math.max(1, Number.parseInt(query.get("page") || "1", 10) || 1);
  for (const box of document.querySelectorAll("#status-filters input")) {
    box.checked = statuses.includes(box.value);
  }
  $("filter-from").value = filters.requestedFrom;
  $("filter-to").value = filters.requestedTo;
  $("filter-requester").value = filters.requestedBy;
  return { filters, page };
}

/** Put ``filters`` and ``page`` into the URL (no new history entry) and count them in the
 * filters' summary. */
export function writeUrl(filters, page) {
  const query = new URLSearchParams();
  for (const status of filters.statuses) query.append("status", status);
  if (filters.exportType) query.set("type", filters.exportType);
  if (filters.requestedBy) query.set("by", filters.requestedBy);
  if (filters.requestedFrom) query.set("from", filters.requestedFrom);
  if (filters.requestedTo) query.set("to", filters.requestedTo);
  if (page > 1) query.set("page", page);
  const search = query.toString();
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
