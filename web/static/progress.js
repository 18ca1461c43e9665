// @ts-check
// Live progress: one Server-Sent Events stream of the caller's tasks
// (GET /api/platform/v1/files/progress, an ``event: task`` with the task JSON whenever a
// task changes). When the stream fails, the page falls back to polling the list and tries
// the stream again after STREAM_RETRY_MS.
"use strict";

import { PROGRESS } from "./client.js";

/** @import { Task } from "./client.js" */
/** @typedef {"connecting" | "live" | "polling"} Mode  How the page learns of progress. */

// Wait before opening the stream again after it failed, milliseconds.
const STREAM_RETRY_MS = 15000;

/** @type {EventSource | null} */
let source = null;
/** @type {ReturnType<typeof setTimeout> | null} */
let retryTimer = null;
/** @type {{onTask: (task: Task) => void, onMode: (mode: Mode) => void} | null} */
let handlers = null;

/** @param {Mode} mode */
function setMode(mode) {
  if (handlers) handlers.onMode(mode);
}

/** The task of an event's JSON (an envelope's data is tolerated), or null when it has none.
 * @param {unknown} json
 * @returns {Task | null} */
function taskOf(json) {
  let value = json;
  if (value && typeof value === "object" && "code" in value && value.code && "data" in value) {
    if (value.data) value = value.data; // tolerate an envelope
  }
  if (value && typeof value === "object" && "id" in value && value.id) {
    return /** @type {Task} */ (value); // the task JSON of web/schemas.py
  }
  return null;
}

function open() {
  retryTimer = null;
  source = new EventSource(PROGRESS);
  source.addEventListener("open", () => setMode("live"));
  source.addEventListener("task", (event) => {
    /** @type {unknown} */
    let json;
    try {
      json = JSON.parse(event.data);
    } catch {
      return; // not JSON: nothing to show
    }
    const task = taskOf(json);
    if (task && handlers) handlers.onTask(task);
  });
  source.addEventListener("error", () => {
    // EventSource would reconnect by itself, but a failing stream may be a proxy that
    // buffers or refuses it: poll meanwhile rather than show stale progress.
    stop(false);
    setMode("polling");
    retryTimer = setTimeout(open, STREAM_RETRY_MS);
  });
}

/**
 * Start the stream. ``onTask(task)`` gets every pushed task; ``onMode(mode)`` gets
 * "live" once the stream is open and "polling" when it failed.
 * @param {(task: Task) => void} onTask
 * @param {(mode: Mode) => void} onMode
 */
export function startProgress(onTask, onMode) {
  stopProgress();
  handlers = { onTask, onMode };
  if (typeof EventSource === "undefined") {
    setMode("polling");
    return;
  }
  setMode("connecting");
  open();
}

/** @param {boolean} clearHandlers */
function stop(clearHandlers) {
  if (source) {
    source.close();
    source = null;
  }
  if (clearHandlers) {
    if (retryTimer !== null) clearTimeout(retryTimer);
    retryTimer = null;
    handlers = null;
  }
}

/** Close the stream and forget the handlers (sign-out). */
export function stopProgress() {
  stop(true);
}
