// Events (docs/console.md).

import { h } from "../lib/dom.js";

export const id = "events";
export const title = "Events";

export async function render(view) {
  return h("p", {}, "Not built yet.");
}
