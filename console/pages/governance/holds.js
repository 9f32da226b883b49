// Governance: the tenant's legal holds and this user's (docs/console.md "Governance").

import { call, path } from "../../lib/api.js";
import { fill, h, text, when } from "../../lib/dom.js";
import { confirmAction, fields, problem, section } from "../../lib/ui.js";

/** Kinds a legal hold may name (docs/forgetting.md "Legal holds"). */
const HOLD_KINDS = ["documents", "snapshots", "events", "audit", "replays"];

export async function holdsSection(view) {
  const body = h("div");
  await showHolds(view, body);
  return section("Legal holds",
    h("p", {}, "A hold keeps the kinds it names through retention and forgetting; a forget then deletes ",
      "everything else and its receipt names the hold."),
    body);
}

function holdsPath(view, ...rest) {
  return path("v1", "admin", "tenants", view.tenant, ...rest);
}

/** The tenant's holds (admin), this user's, and the forms to set or clear it. */
async function showHolds(view, into) {
  let holds;
  try {
    holds = (await call("GET", holdsPath(view, "holds"))).body;
  } catch (error) {
    fill(into, problem(error));
    return;
  }
  const rows = [];
  if (holds.tenant) rows.push([`tenant ${view.tenant}`, holds.tenant]);
  for (const [user, hold] of Object.entries(holds.users || {})) rows.push([`user ${user}`, hold]);
  const mine = (holds.users || {})[view.user];
  const status = h("div", { role: "status" });
  fill(into,
    rows.length
      ? h("table", {},
        h("caption", {}, `Legal holds of tenant ${view.tenant}`),
        h("thead", {}, h("tr", {}, ["Scope", "Reason", "Kinds", "Set by", "Set at"]
          .map((heading) => h("th", { scope: "col" }, heading)))),
        h("tbody", {}, rows.map(([scope, hold]) => h("tr", {},
          h("th", { scope: "row" }, text(scope)), h("td", {}, text(hold.reason)),
          h("td", {}, text((hold.kinds || HOLD_KINDS).join(", "))), h("td", {}, text(hold.set_by)),
          h("td", {}, when(hold.set_at))))))
      : h("p", {}, "No legal hold in this tenant."),
    h("p", {}, holds.tenant ? "The tenant's hold applies to this user. " : "",
      mine ? h("strong", {}, "This user is under a legal hold.") : "This user has no hold of their own."),
    holdForm(view, into, status, Boolean(mine)),
    mine ? h("div", { class: "actions" }, h("button", {
      type: "button", class: "danger", onclick: () => clearHold(view, into, status),
    }, "Clear this user's hold…")) : null,
    status,
  );
}

function holdForm(view, into, status, replacing) {
  const form = h("form", { class: "hold-form", "aria-label": "Hold this user" },
    h("label", { for: "hold-reason" }, "Reason"),
    h("input", { id: "hold-reason", name: "reason", required: true, maxlength: "500", autocomplete: "off" }),
    h("fieldset", {},
      h("legend", {}, "Kinds held (none ticked: all)"),
      HOLD_KINDS.map((kind) => h("label", { class: "check" },
        h("input", { type: "checkbox", name: "kind", value: kind }), ` ${kind}`))),
    h("div", { class: "actions" },
      h("button", { type: "submit" }, replacing ? "Replace this user's hold…" : "Hold this user…")),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const { reason } = fields(form);
    const kinds = [...form.querySelectorAll("input[name=kind]:checked")].map((box) => box.value);
    const yes = await confirmAction({
      title: "Set a legal hold",
      message: `User ${view.user}: ${kinds.length ? kinds.join(", ") : "every kind"} kept through retention ` +
        "and forgetting until the hold is cleared.",
      action: "Set hold",
    });
    if (!yes) return;
    try {
      await call("PUT", holdsPath(view, "users", view.user, "hold"), { body: { reason, ...(kinds.length && { kinds }) } });
    } catch (error) {
      fill(status, problem(error));
      return;
    }
    await showHolds(view, into);
  });
  return form;
}

async function clearHold(view, into, status) {
  const yes = await confirmAction({
    title: "Clear the legal hold",
    message: `User ${view.user}'s data is no longer held: retention and forgetting apply to it again. ` +
      "Clearing deletes nothing by itself.",
    action: "Clear hold",
  });
  if (!yes) return;
  try {
    await call("DELETE", holdsPath(view, "users", view.user, "hold"));
  } catch (error) {
    fill(status, problem(error));
    return;
  }
  await showHolds(view, into);
}
