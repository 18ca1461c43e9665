// Small DOM and formatting helpers. Text from users and Providers (task names, messages)
// is only ever set with textContent, never parsed as HTML.
"use strict";

export const $ = (id) => document.getElementById(id);

export function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}

export function button(text, className, label, onClick) {
  const node = el("button", text, className);
  node.type = "button";
  if (label) node.setAttribute("aria-label", label);
  node.addEventListener("click", onClick);
  return node;
}

export function formatNumber(text) {
  return text === null || text === undefined ? "?" : Number(text).toLocaleString("en");
}

export function formatBytes(text) {
  const size = Number(text);
  if (text === null || text === undefined || !Number.isFinite(size)) return "";
  const units = ["B", "KB", "MB", "GB"];
  let value = size;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(unit === 0 ? 0 : 1)} ${units[unit]}`;
}

export function formatTime(iso) {
  return iso ? new Date(iso).toLocaleString() : "";
}

/** A <time> element: the local time as text, the ISO instant as its datetime. */
export function timeEl(iso, prefix = "") {
  const node = el("time", `${prefix}${formatTime(iso)}`);
  if (iso) node.dateTime = iso;
  return node;
}
