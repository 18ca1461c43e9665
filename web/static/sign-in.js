// @ts-check
// Signing in and out, and which of the page's two sections shows, the sign-in or the
// download center. With the company's identity provider (GET /auth/options says so) the
// sign-in is one button that goes there and comes back to this very page (web/sign_in.py);
// without one — the embedded demo — a pasted token becomes the HttpOnly session cookie
// (client.js, signIn; the page never keeps it). A sign-in that came back unfinished says
// why (``?signInProblem=…``), and Sign out ends the provider's session too.
"use strict";

import { banner, showError } from "./banner.js";
import { ApiError, messageOf, signIn, signInOptions, signOut } from "./client.js";
import { $ } from "./dom.js";
import { t } from "./i18n.js";

/** @import { Session } from "./client.js" */
/** @import { WordKey } from "./i18n.js" */

/** The query parameter a sign-in that did not finish comes back with (web/sign_in.py). */
const PROBLEM = "signInProblem";
/** Its values, and the catalogue's words for each. */
const PROBLEM_WORDS = /** @type {Record<string, WordKey>} */ ({
  refused: "problemRefused",
  "not-started": "problemNotStarted",
  state: "problemState",
  code: "problemCode",
  token: "problemToken",
  unreachable: "problemUnreachable",
});

/** How this service signs people in, once asked. */
let options = /** @type {{oidc: boolean, name?: string | null}} */ ({ oidc: false });

/** Show the sign-in or the download center.
 * @param {"sign-in" | "center"} section */
export function showSection(section) {
  $("sign-in").hidden = section !== "sign-in";
  $("center").hidden = section !== "center";
  $("sign-out").hidden = section !== "center";
}

/** The company sign-in's address, coming back to this page as it is now. */
function companyUrl() {
  const here = new URL(window.location.href);
  here.searchParams.delete(PROBLEM);
  return `/auth/login?${new URLSearchParams({ next: here.pathname + here.search })}`;
}

/** Put the sign-in's words in the page's language (the button names the provider). */
export function rewordSignIn() {
  $("company-sign-in-link").textContent = options.name
    ? t("signInWith", { name: options.name })
    : t("signInCompany");
}

/** Show the sign-in, the keyboard on its button or its token field. */
export function askToSignIn() {
  showSection("sign-in");
  $("company-sign-in").hidden = !options.oidc;
  $("token-sign-in").hidden = options.oidc;
  if (options.oidc) {
    const link = $("company-sign-in-link", HTMLAnchorElement);
    link.href = companyUrl();
    link.focus();
  } else {
    $("token").focus();
  }
}

/** Say why a sign-in came back unfinished, once, and take the reason out of the URL. */
function tellProblem() {
  const here = new URL(window.location.href);
  const problem = here.searchParams.get(PROBLEM);
  if (problem === null) return;
  here.searchParams.delete(PROBLEM);
  window.history.replaceState(null, "", here.pathname + here.search + here.hash);
  const key = PROBLEM_WORDS[problem] || "problemNotStarted";
  banner(() => t(key, { name: options.name || t("companyAccount") }), "error", {
    detail: `signInProblem=${problem}`,
  });
}

/** Wire the sign-in and Sign out: the session of an accepted token goes to
 * ``onSignedIn``; signing out calls ``onSignedOut``, then says so or goes to the identity
 * provider to end its session too.
 * @param {(session: Session) => void} onSignedIn
 * @param {() => void} onSignedOut */
export async function setUpSignIn(onSignedIn, onSignedOut) {
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
      const provider = await signOut();
      onSignedOut();
      if (provider) window.location.assign(provider);
      else banner(() => t("signedOut"), "info");
    } catch (error) {
      showError(error);
    }
  });
  try {
    options = await signInOptions();
  } catch {
    options = { oidc: false };
  }
  rewordSignIn();
  tellProblem();
}
