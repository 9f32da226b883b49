// Memory (docs/console.md).

import { h } from "../lib/dom.js";

export const id = "memory";
export const title = "Memory";

export async function render(view) {
  return h("p", {}, "Not built yet.");
}
