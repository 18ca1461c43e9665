// @ts-check
// The page's banner (what just happened, or why not: role=alert, kept in view) and the
// screen reader's live region. A banner given as a function is written again when the
// person switches language.
"use strict";

import { ApiError, messageOf, SignedOut } from "./client.js";
import { $ } from "./dom.js";
import { refusalWords, t } from "./i18n.js";

/** @typedef {"error" | "info"} Kind  How the banner looks. */

/** The banner shown, when it is given as a function (to write again in a new language).
 * @type {{message: () => string, kind: Kind, detail: string} | null} */
let shown = null;

/** Show ``message`` (or, given a function, what it returns: then :func:`reword` writes it
 * again in a new language); ``detail`` folded under "Details".
 * @param {string | (() => string)} message
 * @param {Kind} [kind]
 * @param {{detail?: string}} [more] */
export function banner(message, kind = "error", { detail = "" } = {}) {
  shown = typeof message === "function" ? { message, kind, detail } : null;
  const text = typeof message === "function" ? message() : message;
  $("banner-text").textContent = text || "";
  $("banner").className = kind;
  $("banner").hidden = !text;
  $("banner-detail").textContent = detail;
  $("banner-details").hidden = !detail || detail === text;
}

/** Its Close button puts the banner away. */
export function setUpBanner() {
  $("banner-close").addEventListener("click", () => banner(""));
}

/** Write the banner again in the page's current language. */
export function reword() {
  if (shown) banner(shown.message, shown.kind, { detail: shown.detail });
}

/** A refusal or failure: the catalogue's words for its code in the page's language, with
 * the service's own message one click away. Any other error (the network's, say) reads as
 * its message.
 * @param {unknown} error */
export function showError(error) {
  if (error instanceof SignedOut) {
    banner(() => t("sessionEnded"), "error", { detail: error.detail });
    return;
  }
  const message = messageOf(error);
  const code = error instanceof ApiError ? error.code : "";
  const detail = error instanceof ApiError ? error.detail : "";
  const words = () => (code && refusalWords(code)) || message;
  banner(words, "error", { detail: detail || message });
}

/** Say ``message`` to a screen reader (the aria-live region).
 * @param {string} message */
export function announce(message) {
  $("live").textContent = message;
}
