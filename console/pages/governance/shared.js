// What the Governance page's sections share (docs/console.md "Governance").

import { path } from "../../lib/api.js";
import { h } from "../../lib/dom.js";
import { hidden } from "../../lib/ui.js";

/** "Hidden from you" for an action the caller's roles do not include. */
export function roleHidden(view, what, role) {
  return hidden({
    code: "ROLE_FORBIDDEN",
    message: `${what} needs the '${role}' role; you have ${view.me.roles.join(", ") || "none"}.`,
  });
}

export function userPath(view, ...rest) {
  return path("v1", "tenants", view.tenant, "users", view.user, ...rest);
}

/** A definition list of [term, node] pairs (null nodes left out). */
export function facts(label, pairs) {
  return h("dl", { class: "facts", "aria-label": label },
    pairs.filter(([, value]) => value !== null && value !== undefined)
      .map(([term, value]) => [h("dt", {}, term), h("dd", {}, value)]));
}
