// @ts-check
// The list's filters as values: read from the page's URL (a reload or a shared link keeps
// them), written back to it, and turned into the list request's query. Pure: no DOM, no
// state of its own (tests/web/static/filter-query.test.mjs runs it in Node); filters.js
// puts them into the filter form and the address bar.
"use strict";

/**
 * @typedef {object} Filters  What the list shows: all of it when every field is empty.
 * @property {string[]} statuses  Task statuses (PENDING, RUNNING …), any of them.
 * @property {string} exportType  An export type's key.
 * @property {string} requestedBy  A requester's user id (an administrator's filter).
 * @property {string} requestedFrom  The first day (yyyy-mm-dd, the person's own calendar).
 * @property {string} requestedTo  The last day, included (yyyy-mm-dd).
 */

export const PAGE_SIZE = 20;
/** @type {Readonly<Filters>} */
export const NO_FILTERS = Object.freeze({
  statuses: [],
  exportType: "",
  requestedBy: "",
  requestedFrom: "",
  requestedTo: "",
});
const DATE = /^\d{4}-\d{2}-\d{2}$/;
/** The statuses a task can be in: any other value in the URL is not a filter. */
export const STATUSES = Object.freeze(["PENDING", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED", "EXPIRED"]);
/** What an export type's key looks like (the registry's keys); the page drops a
 * well-formed key it is not offered once the types are loaded. */
const TYPE_KEY = /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/;

/** How many filters are on.
 * @param {Filters} f
 * @returns {number} */
export function activeFilters(f) {
  return [f.statuses.length > 0, f.exportType, f.requestedBy, f.requestedFrom, f.requestedTo]
    .filter(Boolean).length;
}

/** The start of the local day ``date`` (yyyy-mm-dd) plus ``days``, as an ISO-8601 UTC
 * time: the person means their own calendar day, the API takes instants.
 * @param {string} date
 * @param {number} [days]
 * @returns {string} */
function dayStart(date, days = 0) {
  const [year, month, day] = date.split("-").map(Number);
  return new Date(year, month - 1, day + days).toISOString();
}

/** The list request's query for ``filters`` and ``page``; ``admin`` may filter by requester.
 * @param {Filters} filters
 * @param {number} page
 * @param {boolean} admin
 * @returns {URLSearchParams} */
export function listQuery(filters, page, admin) {
  const query = new URLSearchParams({ page: String(page), pageSize: String(PAGE_SIZE) });
  for (const status of filters.statuses) query.append("status", status);
  if (filters.exportType) query.set("exportType", filters.exportType);
  if (filters.requestedBy && admin) query.set("requestedBy", filters.requestedBy);
  // requestedTo is exclusive: the day after the last day asked for, at its start.
  if (filters.requestedFrom) query.set("requestedFrom", dayStart(filters.requestedFrom));
  if (filters.requestedTo) query.set("requestedTo", dayStart(filters.requestedTo, 1));
  return query;
}

/** ``{filters, page}`` from the page URL's query ``search`` (``location.search``). Values
 * that are not well formed — an unknown status, a type key no registry could hold, a day
 * that is not one — are left out, not trusted, so the filters said to be on are the ones
 * the list applies.
 * @param {string} search
 * @returns {{filters: Filters, page: number}} */
export function readUrl(search) {
  const query = new URLSearchParams(search);
  /** The parameter ``name`` when it matches ``pattern``, else "".
   * @param {string} name
   * @param {RegExp} pattern */
  const valid = (name, pattern) => {
    const value = query.get(name) || "";
    return pattern.test(value) ? value : "";
  };
  const filters = {
    statuses: [...new Set(query.getAll("status").filter((s) => STATUSES.includes(s)))],
    exportType: valid("type", TYPE_KEY),
    requestedBy: valid("by", /^\d+$/),
    requestedFrom: valid("from", DATE),
    requestedTo: valid("to", DATE),
  };
  const page = Math.max(1, Number.parseInt(query.get("page") || "1", 10) || 1);
  return { filters, page };
}

/** The page URL's query for ``filters`` and ``page`` (what :func:`readUrl` reads back): ""
 * when no filter is on, on the first page.
 * @param {Filters} filters
 * @param {number} page
 * @returns {string} */
export function urlQuery(filters, page) {
  const query = new URLSearchParams();
  for (const status of filters.statuses) query.append("status", status);
  if (filters.exportType) query.set("type", filters.exportType);
  if (filters.requestedBy) query.set("by", filters.requestedBy);
  if (filters.requestedFrom) query.set("from", filters.requestedFrom);
  if (filters.requestedTo) query.set("to", filters.requestedTo);
  if (page > 1) query.set("page", String(page));
  return query.toString();
}
