// Review (docs/console.md).

import { h } from "../lib/dom.js";

export const id = "review";
export const title = "Review";

export async function render(view) {
  return h("p", {}, "Not built yet.");
}
