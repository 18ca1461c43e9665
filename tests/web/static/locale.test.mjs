// Numbers, sizes, durations and relative times in the person's locale (web/static/locale.js,
// README "Download center page": dates, numbers and sizes in the person's locale), in both
// of the page's languages.
import assert from "node:assert/strict";
import test from "node:test";

import {
  formatBytes,
  formatDuration,
  formatNumber,
  formatRelative,
  formatStamp,
} from "../../../web/static/locale.js";

/** [value, English, Simplified Chinese] */
const SIZES = [
  [null, "", ""],
  [undefined, "", ""],
  ["not a number", "", ""],
  [0, "0 byte", "0 B"],
  [999, "999 byte", "999 B"],
  [1000, "1 kB", "1 kB"], // SI units: 1 kB is 1000 bytes
  [1500, "1.5 kB", "1.5 kB"],
  [1_000_000, "1 MB", "1 MB"],
  ["2500000", "2.5 MB", "2.5 MB"], // a 64-bit size comes as a string
  [1.5e9, "1.5 GB", "1.5 GB"],
  [5e12, "5,000 GB", "5,000 GB"], // gigabytes are the largest unit
];

for (const [value, en, zh] of SIZES) {
  test(`formatBytes(${JSON.stringify(value)}) is "${en}" / "${zh}"`, () => {
    assert.equal(formatBytes(value, "en"), en);
    assert.equal(formatBytes(value, "zh-CN"), zh);
  });
}

/** [seconds, English, Simplified Chinese]: two units at most, whole seconds. */
const DURATIONS = [
  [0, "0 sec", "0秒"],
  [0.4, "0 sec", "0秒"],
  [-5, "0 sec", "0秒"], // never negative
  [1, "1 sec", "1秒"],
  [59.6, "1 min", "1分钟"], // rounded to whole seconds first
  [65, "1 min 5 sec", "1分钟5秒"],
  [3600, "1 hr", "1小时"],
  [3661, "1 hr 1 min", "1小时1分钟"], // seconds are left out beside hours
  [90061, "25 hr 1 min", "25小时1分钟"], // no days
];

for (const [seconds, en, zh] of DURATIONS) {
  test(`formatDuration(${seconds}) is "${en}" / "${zh}"`, () => {
    assert.equal(formatDuration(seconds, "en"), en);
    assert.equal(formatDuration(seconds, "zh-CN"), zh);
  });
}

test("formatNumber groups digits and says ? for no number", () => {
  assert.equal(formatNumber(1234567, "en"), "1,234,567");
  assert.equal(formatNumber("1234567", "zh-CN"), "1,234,567");
  assert.equal(formatNumber(0, "en"), "0");
  assert.equal(formatNumber(null, "en"), "?");
  assert.equal(formatNumber(undefined, "zh-CN"), "?");
});

const NOW = Date.parse("2026-12-05T12:00:00Z");
/** [time, English, Simplified Chinese], relative to NOW */
const TIMES = [
  ["2026-12-05T12:00:00Z", "now", "现在"],
  ["2026-12-05T11:59:15Z", "45 seconds ago", "45秒钟前"],
  ["2026-12-05T11:57:00Z", "3 minutes ago", "3分钟前"],
  ["2026-12-11T12:00:00Z", "in 6 days", "6天后"],
  ["2026-12-04T12:00:00Z", "yesterday", "昨天"],
  ["2025-12-05T12:00:00Z", "last year", "去年"],
];

for (const [iso, en, zh] of TIMES) {
  test(`formatRelative(${iso}) is "${en}" / "${zh}"`, () => {
    assert.equal(formatRelative(iso, "en", NOW), en);
    assert.equal(formatRelative(iso, "zh-CN", NOW), zh);
  });
}

test("formatStamp writes the exact time to the minute with its zone, on one short line", () => {
  process.env.TZ = "UTC";
  assert.equal(formatStamp("2026-12-07T22:59:29Z", "en"), "Dec 7, 2026, 22:59 UTC");
  assert.equal(formatStamp("2026-12-07T22:59:29Z", "zh-CN"), "2026年12月7日 UTC 22:59");
  assert.equal(formatStamp("", "en"), "");
});
