// @ts-check
// Signing in and out: the sign-in form (the pasted token becomes the HttpOnly session
// cookie, client.js, signIn; the page never keeps it), the Sign out button, and which of
// the page's two sections shows, the sign-in form or the download center.
"use strict";

import { banner, showError } from "./banner.js";
import { ApiError, messageOf, signIn, signOut } from "./client.js";
import { $ } from "./dom.js";
import { t } from "./i18n.js";

/** @import { Session } from "./client.js" */

/** Show the sign-in form or the download center.
 * @param {"sign-in" | "center"} section */
export function showSection(section) {
  $("sign-in").hidden = section !== "sign-in";
  $("center").hidden = section !== "center";
  $("sign-out").hidden = section !== "center";
}

/** Show the sign-in form, the keyboard in its token field. */
export function askForToken() {
  showSection("sign-in");
  $("token").focus();
}

/** Wire the sign-in form and Sign out: the session of an accepted token goes to
 * ``onSignedIn``; signing out calls ``onSignedOut``, then says so.
 * @param {(session: Session) => void} onSignedIn
 * @param {() => void} onSignedOut */
export function setUpSignIn(onSignedIn, onSignedOut) {
  $("token-form", HTMLFormElement).addEventListener("submit", async (event) => {
    event.preventDefault();
    const input = $("token", HTMLInputElement);
    const token = input.value.trim();
    input.value = "";
    try {
      onSignedIn(await signIn(token));
    } catch (error) {
      const rejected = error instanceof ApiError && error.code === "401";
      banner(() => (rejected ? t("tokenRejected") : messageOf(error)), "error", {
        detail: error instanceof ApiError ? error.detail : "",
      });
      input.focus();
    }
  });
  $("sign-out").addEventListener("click", async () => {
    try {
      await signOut();
      onSignedOut();
      banner(() => t("signedOut"), "info");
    } catch (error) {
      showError(error);
    }
  });
}
