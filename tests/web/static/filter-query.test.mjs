// The list's filters in the page's URL and in the list request (web/static/filter-query.js;
// README "Download center page": filters live in the page's URL, requested-at days are the
// person's own calendar days, the last one included).
import assert from "node:assert/strict";
import test from "node:test";

import {
  activeFilters,
  listQuery,
  NO_FILTERS,
  readUrl,
  urlQuery,
} from "../../../web/static/filter-query.js";

// A day is the person's own: in Shanghai (UTC+8, no daylight saving) it starts at 16:00
// UTC the day before. Each test file runs in a process of its own.
process.env.TZ = "Asia/Shanghai";

/** @param {object} [changes] */
const filters = (changes = {}) => ({ ...NO_FILTERS, statuses: [], ...changes });

/** [what, filters, page, admin, the query] */
const LIST_QUERIES = [
  ["no filter", filters(), 1, false, "page=1&pageSize=20"],
  ["a later page", filters(), 3, false, "page=3&pageSize=20"],
  [
    "several statuses, each a parameter",
    filters({ statuses: ["FAILED", "CANCELLED"] }),
    1,
    false,
    "page=1&pageSize=20&status=FAILED&status=CANCELLED",
  ],
  ["the type", filters({ exportType: "CUSTOMER_LIST" }), 1, false, "page=1&pageSize=20&exportType=CUSTOMER_LIST"],
  ["a requester, for an administrator", filters({ requestedBy: "42" }), 1, true, "page=1&pageSize=20&requestedBy=42"],
  ["a requester, ignored for anyone else", filters({ requestedBy: "42" }), 1, false, "page=1&pageSize=20"],
  [
    "the first day, from its local start",
    filters({ requestedFrom: "2026-12-01" }),
    1,
    false,
    "page=1&pageSize=20&requestedFrom=2026-11-30T16%3A00%3A00.000Z",
  ],
  [
    "the last day included: until the next day's local start",
    filters({ requestedTo: "2026-12-31" }),
    1,
    false,
    "page=1&pageSize=20&requestedTo=2026-12-31T16%3A00%3A00.000Z",
  ],
  [
    "one day",
    filters({ requestedFrom: "2026-02-28", requestedTo: "2026-02-28" }),
    2,
    false,
    "page=2&pageSize=20&requestedFrom=2026-02-27T16%3A00%3A00.000Z&requestedTo=2026-02-28T16%3A00%3A00.000Z",
  ],
];

for (const [what, given, page, admin, query] of LIST_QUERIES) {
  test(`listQuery: ${what}`, () => {
    assert.equal(listQuery(given, page, admin).toString(), query);
  });
}

/** [the URL's query, the filters, the page] */
const URLS = [
  ["", filters(), 1],
  ["?status=FAILED&status=RUNNING", filters({ statuses: ["FAILED", "RUNNING"] }), 1],
  ["?status=failed&status=RUN1&status=&status=EXPIRED", filters({ statuses: ["EXPIRED"] }), 1],
  ["?status=BOGUS", filters(), 1], // not a status: no filter said to be on
  ["?status=FAILED&status=FAILED", filters({ statuses: ["FAILED"] }), 1],
  ["?type=CUSTOMER_LIST", filters({ exportType: "CUSTOMER_LIST" }), 1],
  ["?type=%3Cscript%3E", filters(), 1],
  ["?by=42", filters({ requestedBy: "42" }), 1],
  ["?by=4x", filters(), 1],
  ["?by=-1", filters(), 1],
  ["?from=2026-12-01&to=2026-12-05", filters({ requestedFrom: "2026-12-01", requestedTo: "2026-12-05" }), 1],
  ["?from=2026-1-1&to=yesterday", filters(), 1],
  ["?page=3", filters(), 3],
  ["?page=0", filters(), 1],
  ["?page=-2", filters(), 1],
  ["?page=many", filters(), 1],
  ["?page=2.7", filters(), 2],
  ["?token=secret&q=1", filters(), 1], // other parameters are ignored
];

for (const [search, expected, page] of URLS) {
  test(`readUrl(${JSON.stringify(search)})`, () => {
    assert.deepEqual(readUrl(search), { filters: expected, page });
  });
}

/** [filters, page, the URL's query] */
const WRITTEN = [
  [filters(), 1, ""],
  [filters(), 2, "page=2"],
  [
    filters({
      statuses: ["PENDING", "RUNNING"],
      exportType: "CUSTOMER_LIST",
      requestedBy: "7",
      requestedFrom: "2026-12-01",
      requestedTo: "2026-12-05",
    }),
    4,
    "status=PENDING&status=RUNNING&type=CUSTOMER_LIST&by=7&from=2026-12-01&to=2026-12-05&page=4",
  ],
];

for (const [given, page, search] of WRITTEN) {
  test(`urlQuery writes "${search}" and readUrl reads it back`, () => {
    assert.equal(urlQuery(given, page), search);
    assert.deepEqual(readUrl(search), { filters: given, page });
  });
}

test("activeFilters counts each filter that is on once", () => {
  assert.equal(activeFilters(filters()), 0);
  assert.equal(activeFilters(filters({ statuses: ["FAILED", "CANCELLED"] })), 1);
  assert.equal(
    activeFilters(filters({ exportType: "T", requestedBy: "1", requestedFrom: "2026-01-01", requestedTo: "2026-01-02" })),
    4,
  );
});
