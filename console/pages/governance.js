// Governance (docs/console.md "Governance"): forgetting the user or one conversation
// (typed confirmation), following the job to its receipt; the tenant's legal holds and
// this user's; exports of the user's memory, their files and their deletion.
//
// What the caller may not do is said, not left out: a section the API refuses (403) or
// the caller's roles rule out shows "Hidden from you" with the reason.

import { h } from "../lib/dom.js";
import { exportSection } from "./governance/exports.js";
import { forgetSection } from "./governance/forget.js";
import { holdsSection } from "./governance/holds.js";

export const id = "governance";
export const title = "Governance";

export async function render(view) {
  const roles = new Set(view.me.roles);
  const parts = await Promise.all([forgetSection(view, roles), holdsSection(view), exportSection(view, roles)]);
  return h("div", {}, ...parts);
}
