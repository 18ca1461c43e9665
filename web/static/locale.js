// @ts-check
// Numbers, sizes, durations and times in a person's locale (a language tag: "en",
// "zh-CN"), by the browser's Intl. Pure: no DOM, no state of its own, the locale and the
// clock are arguments (tests/web/static/locale.test.mjs runs it in Node); i18n.js gives
// them the page's current language.
"use strict";

/** ``value`` (a number, or a 64-bit count as a string) with the locale's separators; "?"
 * when there is none.
 * @param {number | string | null | undefined} value
 * @param {string} locale
 * @returns {string} */
export function formatNumber(value, locale) {
  if (value === null || value === undefined) return "?";
  return Number(value).toLocaleString(locale);
}

/** A size in bytes as "1.5 MB" (SI units, as Intl names them); "" when there is none.
 * @param {number | string | null | undefined} value
 * @param {string} locale
 * @returns {string} */
export function formatBytes(value, locale) {
  const size = Number(value);
  if (value === null || value === undefined || !Number.isFinite(size)) return "";
  // SI units (1 kB = 1000 bytes), as Intl names them.
  const units = ["byte", "kilobyte", "megabyte", "gigabyte"];
  let amount = size;
  let unit = 0;
  while (amount >= 1000 && unit < units.length - 1) {
    amount /= 1000;
    unit += 1;
  }
  return new Intl.NumberFormat(locale, {
    style: "unit",
    unit: units[unit],
    unitDisplay: "short",
    maximumFractionDigits: unit === 0 ? 0 : 1,
  }).format(amount);
}

/** The exact time with the time zone, e.g. "5 Dec 2026, 16:05:03 UTC"; "" without one.
 * @param {string} iso
 * @param {string} locale
 * @returns {string} */
export function formatExact(iso, locale) {
  if (!iso) return "";
  return new Date(iso).toLocaleString(locale, {
    dateStyle: "medium",
    timeStyle: "long",
  });
}

/** The exact time to the minute with the time zone, short enough for one line beside a
 * relative time on a phone, e.g. "7 Dec 2026, 22:59 UTC" / "2026年12月7日 UTC 22:59";
 * "" without one.
 * @param {string} iso
 * @param {string} locale
 * @returns {string} */
export function formatStamp(iso, locale) {
  if (!iso) return "";
  return new Date(iso).toLocaleString(locale, {
    year: "numeric",
    month: "short",
    day: "numeric",
    hour: "2-digit",
    minute: "2-digit",
    hourCycle: "h23",
    timeZoneName: "short",
  });
}

/** @type {[Intl.RelativeTimeFormatUnit, number][]} */
const STEPS = [
  ["second", 60],
  ["minute", 60],
  ["hour", 24],
  ["day", 30],
  ["month", 12],
  ["year", Infinity],
];

/** "3 min ago", "in 6 days": ``iso`` relative to ``now`` (milliseconds since the epoch).
 * @param {string} iso
 * @param {string} locale
 * @param {number} now
 * @returns {string} */
export function formatRelative(iso, locale, now) {
  let amount = (new Date(iso).getTime() - now) / 1000;
  const format = new Intl.RelativeTimeFormat(locale, { numeric: "auto", style: "long" });
  for (const [unit, size] of STEPS) {
    if (Math.abs(amount) < size) return format.format(Math.round(amount), unit);
    amount /= size;
  }
  return "";
}

/** A duration in seconds as "1 min 5 s" / "1分钟5秒" (two units at most).
 * @param {number} seconds
 * @param {string} locale
 * @returns {string} */
export function formatDuration(seconds, locale) {
  const total = Math.max(0, Math.round(seconds));
  const parts = [];
  const hours = Math.floor(total / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const secs = total % 60;
  /** @param {number} value @param {string} name */
  const unit = (value, name) =>
    new Intl.NumberFormat(locale, { style: "unit", unit: name, unitDisplay: "short" }).format(value);
  if (hours) parts.push(unit(hours, "hour"));
  if (minutes) parts.push(unit(minutes, "minute"));
  if (!hours && (secs || parts.length === 0)) parts.push(unit(secs, "second"));
  return parts.slice(0, 2).join(locale === "en" ? " " : "");
}
