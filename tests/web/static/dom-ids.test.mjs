// Each DOM id of the download center page is looked up by exactly one module, the one that
// owns its element; the others go through that module's functions (issue 34 item 6). And
// every id the script looks up is on the page (web/static/download-center.html) or given
// to an element the script makes. Ids are looked up only as $("literal") (dom.js), so this
// scan of the source sees every lookup: a computed $(id), a getElementById or an id in a
// selector string fails it.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import test from "node:test";

const STATIC = new URL("../../../web/static/", import.meta.url);
const MODULES = readdirSync(STATIC).filter((name) => name.endsWith(".js")).sort();
const source = (name) => readFileSync(new URL(name, STATIC), "utf8");

/** Every literal id ``module`` looks up with $("…"). */
function lookups(module) {
  return [...source(module).matchAll(/\$\(\s*"([^"]+)"/g)].map((m) => m[1]);
}

/** The ids of the page's HTML. */
function pageIds() {
  return [...source("download-center.html").matchAll(/\sid="([^"]+)"/g)].map((m) => m[1]);
}

/** The literal ids the script gives to elements it makes (``node.id = "…"``). */
function madeIds() {
  return MODULES.flatMap((module) => [...source(module).matchAll(/\.id\s*=\s*"([^"]+)"/g)].map((m) => m[1]));
}

/** id -> the modules that look it up */
function owners() {
  const found = new Map();
  for (const module of MODULES) {
    for (const id of new Set(lookups(module))) found.set(id, [...(found.get(id) || []), module]);
  }
  return found;
}

test("each id is looked up by one module only", () => {
  const shared = [...owners()].filter(([, modules]) => modules.length > 1);
  assert.deepEqual(
    shared.map(([id, modules]) => `#${id}: ${modules.join(", ")}`),
    [],
    "ids looked up by several modules: give each to the module that owns its element",
  );
});

test("every id looked up is on the page or made by the script", () => {
  const known = new Set([...pageIds(), ...madeIds()]);
  const missing = [...owners()].filter(([id]) => !known.has(id));
  assert.deepEqual(missing.map(([id, modules]) => `#${id}: ${modules.join(", ")}`), []);
});

test("ids are looked up only as $(\"literal\"), so the scan above sees them all", () => {
  const hidden = [];
  for (const module of MODULES) {
    const text = source(module);
    // a call of $ with anything but a string literal: a computed id
    for (const m of text.matchAll(/(?<!function )\$\(\s*(?!")([^)]*)\)/g)) hidden.push(`${module}: $(${m[1]})`);
    for (const m of text.matchAll(/getElementById\(([^)]*)\)/g)) {
      if (module !== "dom.js") hidden.push(`${module}: getElementById(${m[1]})`);
    }
    // an id inside a selector, in any quotes: querySelector("#x …"), closest('#x'),
    // matches(`…#x`), or an attribute selector [id=x]
    const selector = /\.(?:querySelector|querySelectorAll|closest|matches)\(\s*(["'`])((?:(?!\1).)*)\1/g;
    for (const m of text.matchAll(selector)) {
      if (m[2].includes("#") || /\[\s*id\s*[~|^$*]?=/.test(m[2])) hidden.push(`${module}: selector ${m[1]}${m[2]}${m[1]}`);
    }
    // the lookup under another name ($ imported as something else), and forms by name
    for (const m of text.matchAll(/import\s*\{[^}]*\$\s+as\s+(\w+)/g)) hidden.push(`${module}: $ imported as ${m[1]}`);
    for (const m of text.matchAll(/\.forms\.namedItem\(|\.forms\[|document\.forms\.\w/g)) hidden.push(`${module}: ${m[0]}`);
  }
  assert.deepEqual(hidden, []);
});

test("the page's ids are unique", () => {
  const ids = pageIds();
  assert.deepEqual(ids.filter((id, i) => ids.indexOf(id) !== i), []);
});

test("the scan finds the page's modules and their lookups", () => {
  // A guard for the guard: a scan that finds nothing would pass everything above.
  assert.ok(MODULES.includes("download-center.js") && MODULES.includes("dom.js"));
  assert.ok(owners().size >= 40, `only ${owners().size} ids found`);
});
