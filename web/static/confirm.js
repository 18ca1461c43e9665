// @ts-check
// The question asked before an export is stopped: a modal <dialog> whose first, focused
// button keeps the export running, so that Enter, Escape, a second tap where the row's
// button was (it lands on the backdrop) or a tap on the first button all keep it; only the
// second button, "Stop export", stops it. Its words say "stop", never "cancel": in Chinese
// interfaces 取消 reads as "dismiss", and a dialog's Cancel button means "do nothing".
"use strict";

import { $ } from "./dom.js";
import { t } from "./i18n.js";

const dialog = () => $("confirm-stop", HTMLDialogElement);

/** Ask whether to stop the export called ``name``.
 * @param {string} name  the export's name as the row shows it
 * @returns {Promise<boolean>}  true only when the person chose "Stop export" */
export function confirmStop(name) {
  const box = dialog();
  $("confirm-stop-text").textContent = t("stopQuestion", { name });
  box.returnValue = "";
  if (!box.open) box.showModal();
  $("confirm-keep").focus();
  return new Promise((resolve) => {
    box.addEventListener("close", () => resolve(box.returnValue === "stop"), { once: true });
  });
}

/** Wire the dialog: a click on its backdrop (the dialog element, outside its panel)
 * keeps the export running, as Escape does. */
export function setUpConfirm() {
  const box = dialog();
  box.addEventListener("click", (event) => {
    if (event.target === box) box.close("");
  });
}
