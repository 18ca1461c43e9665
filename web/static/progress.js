// Live progress: one Server-Sent Events stream of the caller's tasks
// (GET /api/platform/v1/files/progress, an ``event: task`` with the task JSON whenever a
// task changes). When the stream fails, the page falls back to polling the list and tries
// the stream again after STREAM_RETRY_MS.
"use strict";

import { PROGRESS } from "./client.js";

// Wait before opening the stream again after it failed, milliseconds.
const STREAM_RETRY_MS = 15000;

let source = null;
let retryTimer = null;
let handlers = null;

function setMode(mode) {
  if (handlers) handlers.onMode(mode);
}

function open() {
  retryTimer = null;
  source = new EventSource(PROGRESS);
  source.addEventListener("open", () => setMode("live"));
  source.addEventListener("task", (event) => {
    let task;
    try {
      task = JSON.parse(event.data);
    } catch {
      return; // not JSON: nothing to show
    }
    if (task && task.code && task.data) task = task.data; // tolerate an envelope
    if (task && task.id && handlers) handlers.onTask(task);
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

function stop(clearHandlers) {
  if (source) {
    source.close();
    source = null;
  }
  if (clearHandlers) {
    clearTimeout(retryTimer);
    retryTimer = null;
    handlers = null;
  }
}

/** Close the stream and forget the handlers (sign-out). */
export function stopProgress() {
  stop(true);
}
