// Governance (docs/console.md).

import { h } from "../lib/dom.js";

export const id = "governance";
export const title = "Governance";

export async function render(view) {
  return h("p", {}, "Not built yet.");
}
