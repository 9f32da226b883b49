// History (docs/console.md).

import { h } from "../lib/dom.js";

export const id = "history";
export const title = "History";

export async function render(view) {
  return h("p", {}, "Not built yet.");
}
