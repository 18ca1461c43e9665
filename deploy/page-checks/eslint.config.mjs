// ESLint for the page's script (web/static/*.js, run by the browser) and for what runs it
// in Node (tests/web/static/, this folder): deploy/page-checks/run.sh lint. The
// recommended rules, and a few more that find real bugs cheaply.
import js from "@eslint/js";
import { defineConfig } from "eslint/config";
import globals from "globals";

/** Rules beyond the recommended ones, for all of it. */
const bugs = {
  "array-callback-return": "error",
  eqeqeq: "error",
  "no-promise-executor-return": "error",
  "no-self-compare": "error",
  "no-shadow": "error",
  "no-template-curly-in-string": "error",
  "no-unmodified-loop-condition": "error",
  "no-unreachable-loop": "error",
  "no-var": "error",
  "prefer-const": "error",
};

export default defineConfig([
  {
    files: ["web/static/*.js"],
    extends: [js.configs.recommended],
    languageOptions: { ecmaVersion: 2022, sourceType: "module", globals: globals.browser },
    linterOptions: { reportUnusedDisableDirectives: "error" },
    rules: {
      ...bugs,
      "no-restricted-globals": [
        "error",
        // Browser globals that are easy to use by mistake for a missing local name.
        ...["event", "name", "status", "length", "top", "parent", "self", "close", "open"].map(
          (name) => ({ name, message: `is the browser's global ${name}: a local name was meant?` }),
        ),
      ],
      "no-restricted-properties": [
        "error",
        // Text from users and Providers is only ever written with textContent (web/page.py).
        ...["innerHTML", "outerHTML", "insertAdjacentHTML"].map((property) => ({
          property,
          message: "parses HTML: write text with textContent, or build elements",
        })),
        { object: "document", property: "write", message: "parses HTML" },
      ],
    },
  },
  {
    files: ["tests/web/static/**/*.mjs", "deploy/page-checks/*.mjs"],
    extends: [js.configs.recommended],
    languageOptions: { ecmaVersion: 2022, sourceType: "module", globals: globals.node },
    linterOptions: { reportUnusedDisableDirectives: "error" },
    rules: bugs,
  },
]);
