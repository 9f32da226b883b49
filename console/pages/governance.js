// Governance (docs/console.md "Governance"): forgetting the user or one conversation
// (typed confirmation), following the job to its receipt; the tenant's legal holds and
// this user's; exports of the user's memory, their files and their deletion.
//
// What the caller may not do is said, not left out: a section the API refuses (403) or
// the caller's roles rule out shows "Hidden from you" with the reason.

import { ApiError, call, path, query } from "../lib/api.js";
import { fill, h, json, text, when } from "../lib/dom.js";
import { fetchFile, saveFile } from "../lib/files.js";
import { follow } from "../lib/jobs.js";
import { replaceParams } from "../lib/route.js";
import { confirmAction, fields, hidden, problem, section } from "../lib/ui.js";

export const id = "governance";
export const title = "Governance";

/** Kinds a legal hold may name (docs/forgetting.md "Legal holds"). */
const HOLD_KINDS = ["documents", "snapshots", "events", "audit", "replays"];
/** The phases a job goes through, in order (docs/forgetting.md "Job states"). */
const USER_PHASES = ["deleting", "verifying", "finishing"];
const CONVERSATION_PHASES = ["snapshots", "replays", "events", "documents", "finishing"];

export async function render(view) {
  const roles = new Set(view.me.roles);
  const parts = await Promise.all([forgetSection(view, roles), holdsSection(view), exportSection(view, roles)]);
  return h("div", {}, ...parts);
}

/** "Hidden from you" for an action the caller's roles do not include. */
function roleHidden(view, what, role) {
  return hidden({
    code: "ROLE_FORBIDDEN",
    message: `${what} needs the '${role}' role; you have ${view.me.roles.join(", ") || "none"}.`,
  });
}

function userPath(view, ...rest) {
  return path("v1", "tenants", view.tenant, "users", view.user, ...rest);
}

/** A definition list of [term, node] pairs (null nodes left out). */
function facts(label, pairs) {
  return h("dl", { class: "facts", "aria-label": label },
    pairs.filter(([, value]) => value !== null && value !== undefined)
      .map(([term, value]) => [h("dt", {}, term), h("dd", {}, value)]));
}

// -- forgetting -------------------------------------------------------------------------

async function forgetSection(view, roles) {
  const userJob = h("div", { class: "job" });
  const conversationJob = h("div", { class: "job" });
  const canForget = roles.has("forget");
  const conversation = h("input", {
    id: "gov-conversation", name: "conversation", required: true, autocomplete: "off",
    value: view.params.get("conversation") || "", spellcheck: "false",
  });
  const conversationForm = h("form", { class: "inline-form", "aria-label": "Forget one conversation" },
    h("label", { for: "gov-conversation" }, "Conversation id"), conversation,
    canForget ? h("button", { type: "submit", class: "danger" }, "Forget conversation…") : null,
    h("button", { type: "button", onclick: () => lookUpConversation(view, conversation.value.trim(), conversationJob) },
      "Show its job"));
  conversationForm.addEventListener("submit", (event) => {
    event.preventDefault();
    forgetConversation(view, conversation.value.trim(), conversationJob);
  });
  const shown = [showJob(view, userJob, userPath(view, "forget"), USER_PHASES, "No forget job for this user.")];
  if (conversation.value) shown.push(lookUpConversation(view, conversation.value, conversationJob));
  await Promise.all(shown);
  return section("Forget",
    h("p", {}, "Forgetting deletes data for good; it cannot be undone. Kinds under a legal hold are kept, ",
      "and the receipt says which and why. While a user is being forgotten, writes for that user are refused."),
    canForget ? null : roleHidden(view, "Forgetting", "forget"),
    h("h3", {}, "This user"),
    canForget
      ? h("div", { class: "actions" },
        h("button", { type: "button", class: "danger", onclick: () => forgetUser(view, userJob) }, "Forget this user…"))
      : null,
    userJob,
    h("h3", {}, "One conversation"),
    h("p", { class: "muted" }, "Deletes the conversation's snapshots, replays and events, ",
      "retracts what was learned from it in every document, and deletes the user's exports."),
    conversationForm,
    conversationJob,
  );
}

async function forgetUser(view, into) {
  const yes = await confirmAction({
    title: "Forget this user",
    message: `Every document, event, snapshot, replay, export and audit record of user ${view.user} ` +
      "is deleted for good, except kinds under a legal hold.",
    action: "Forget user",
    typed: view.user,
  });
  if (!yes) return;
  try {
    await call("DELETE", userPath(view));
  } catch (error) {
    fill(into, problem(error));
    return;
  }
  await showJob(view, into, userPath(view, "forget"), USER_PHASES);
}

async function forgetConversation(view, conversationId, into) {
  if (!conversationId) return;
  const yes = await confirmAction({
    title: "Forget this conversation",
    message: `Conversation ${conversationId} of user ${view.user}: its snapshots, replays and events are ` +
      "deleted, what was learned from it is retracted, and the user's exports are deleted.",
    action: "Forget conversation",
    typed: conversationId,
  });
  if (!yes) return;
  replaceParams({ conversation: conversationId });
  try {
    await call("DELETE", userPath(view, "conversations", conversationId));
  } catch (error) {
    fill(into, problem(error));
    return;
  }
  await showJob(view, into, userPath(view, "forget", "conversations", conversationId), CONVERSATION_PHASES);
}

function lookUpConversation(view, conversationId, into) {
  if (!conversationId) return null;
  replaceParams({ conversation: conversationId });
  return showJob(view, into, userPath(view, "forget", "conversations", conversationId), CONVERSATION_PHASES,
    "No forget job for this conversation.");
}

/**
 * Show a forget job and follow it while it runs; once done, its receipt. A 404 is
 * `none` (no job yet), a 403 is said as hidden.
 */
async function showJob(view, into, statusPath, phases, none = null) {
  const job = h("div", { role: "status" });
  const receipt = h("div");
  fill(into, job, receipt);
  const ended = await follow({
    into: job,
    load: async () => (await call("GET", statusPath)).body,
    show: (status) => jobView(status, phases),
    ended: (status) => status.status !== "running" && status.status !== "queued",
    fail: (error) => (none && error instanceof ApiError && error.status === 404
      ? h("p", { class: "muted" }, none)
      : problem(error)),
  });
  if (ended && ended.receipt_id) await showReceipt(view, receipt, ended.receipt_id);
}

/** A job's status: where it is among its phases, what it deleted and kept so far. */
function jobView(job, phases) {
  const running = job.status === "running" || job.status === "queued";
  const at = phases.indexOf(job.phase);
  return h("div", { class: "job-status" },
    h("p", {}, h("strong", {}, `Forget job: ${job.status}`), running ? ` (phase ${job.phase})` : null),
    h("ol", { class: "phases", "aria-label": "Phases" }, phases.map((phase, index) => {
      const state = !running && job.status === "done" ? "done" : index < at ? "done" : index === at ? "now" : "later";
      return h("li", { class: `phase-${state}`, "aria-current": state === "now" ? "step" : null },
        phase, state === "done" ? " ✓" : state === "now" ? " (now)" : null);
    })),
    facts("Job", [
      ["Job", text(job.forget_id)],
      job.conversation_id ? ["Conversation", text(job.conversation_id)] : null,
      ["Asked by", text(job.requested_by)],
      ["Started", when(job.started_at)],
      ["Completed", job.completed_at ? when(job.completed_at) : "not yet"],
      [running ? "Deleted so far" : "Deleted", countsText(job.deleted)],
      job.error ? ["Error", text(job.error.code || job.error)] : null,
    ].filter(Boolean)),
    job.receipt_id ? null : keptView(job.kept), // a finished job's receipt shows it
  );
}

/** `{kind: n}` (a job) or `{kind: {count}}` (a receipt) as "events 3, index 3". */
function countsText(deleted) {
  const entries = Object.entries(deleted || {});
  if (!entries.length) return "nothing";
  return entries.map(([kind, value]) => `${kind} ${typeof value === "number" ? value : value.count}`).join(", ");
}

/** What a legal hold kept: a table per kind, or nothing. */
function keptView(kept) {
  const rows = Object.entries(kept || {});
  if (!rows.length) return null;
  return h("div", { class: "kept" },
    h("table", {},
      h("caption", {}, "Kept, not deleted"),
      h("thead", {}, h("tr", {}, ["Kind", "Why", "Hold reason", "Scope", "Set by", "Set at"]
        .map((heading) => h("th", { scope: "col" }, heading)))),
      h("tbody", {}, rows.map(([kind, why]) => h("tr", {},
        h("th", { scope: "row" }, kind),
        h("td", {}, text(why.reason === "legal_hold" ? "legal hold" : why.reason)),
        h("td", {}, text(why.hold_reason)),
        h("td", {}, text(why.scope)),
        h("td", {}, text(why.set_by)),
        h("td", {}, when(why.set_at)))))));
}

async function showReceipt(view, into, receiptId) {
  fill(into, h("p", { class: "busy" }, "Loading the receipt…"));
  try {
    const answer = await call("GET", path("v1", "tenants", view.tenant, "receipts", receiptId));
    fill(into, receiptView(answer.body));
  } catch (error) {
    fill(into, problem(error));
  }
}

/** A deletion receipt: kinds, counts and name hashes, what was kept, the verification. */
function receiptView(receipt) {
  const deleted = Object.entries(receipt.deleted || {});
  const check = receipt.verification;
  return h("div", { class: "receipt" },
    h("h4", {}, "Receipt ", text(receipt.receipt_id)),
    facts("Receipt", [
      ["Type", text(receipt.type)],
      ["User", text(receipt.user_id)],
      receipt.conversation_id ? ["Conversation", text(receipt.conversation_id)] : null,
      ["Asked by", text(receipt.requested_by)],
      ["Started", when(receipt.started_at)],
      ["Completed", when(receipt.completed_at)],
      ["Deleted in all", String(receipt.total_deleted ?? 0)],
      ["Found late and deleted", String(receipt.late_deleted ?? 0)],
      check ? ["Verified", h("span", {}, when(check.verified_at),
        ` · blobs remaining ${check.blobs_remaining}, index entries remaining ${check.index_entries_remaining}, `,
        `residue bytes ${check.residue_bytes_remaining}`,
        check.recoverable_until ? h("span", {}, " · recoverable by the storage service until ",
          when(check.recoverable_until)) : " · not recoverable")] : null,
    ].filter(Boolean)),
    h("table", {},
      h("caption", {}, "Deleted, by kind"),
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Kind"), h("th", { scope: "col" }, "Count"),
        h("th", { scope: "col" }, "Chain of name hashes (SHA-256)"))),
      h("tbody", {}, deleted.length
        ? deleted.map(([kind, entry]) => h("tr", {},
          h("th", { scope: "row" }, kind), h("td", {}, String(entry.count)),
          h("td", {}, h("code", { class: "hash" }, text(entry.names_chain_sha256)))))
        : h("tr", {}, h("td", { colspan: "3" }, "Nothing was deleted.")))),
    keptView(receipt.kept),
    receipt.retracted && receipt.retracted.length
      ? h("details", {}, h("summary", {}, "Retracted from documents"), json(receipt.retracted)) : null,
    receipt.not_retracted && receipt.not_retracted.length
      ? h("details", {}, h("summary", {}, "Not retracted"), json(receipt.not_retracted)) : null,
    h("details", {}, h("summary", {}, "The receipt as JSON"), json(receipt)),
  );
}

// -- legal holds ----------------------------------------------------------------------

async function holdsSection(view) {
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

// -- export ---------------------------------------------------------------------------

async function exportSection(view, roles) {
  if (!roles.has("read")) {
    return section("Export", roleHidden(view, "Exporting a user's memory", "read"));
  }
  const job = h("div", { class: "job" });
  const exportId = h("input", { id: "export-id", name: "export", autocomplete: "off", spellcheck: "false",
    value: view.params.get("export") || "" });
  const open = h("form", { class: "inline-form", "aria-label": "Open an export" },
    h("label", { for: "export-id" }, "Export id"), exportId,
    h("button", { type: "submit" }, "Show"));
  open.addEventListener("submit", (event) => {
    event.preventDefault();
    if (exportId.value.trim()) showExport(view, job, exportId.value.trim());
  });
  const start = async () => {
    try {
      const answer = await call("POST", userPath(view) + ":export" + query({ profile_id: view.profile }));
      exportId.value = answer.body.export_id;
      await showExport(view, job, answer.body.export_id);
    } catch (error) {
      fill(job, problem(error));
    }
  };
  if (exportId.value) await showExport(view, job, exportId.value);
  return section("Export",
    h("p", {}, "One archive of everything this user's memory holds that you may read, with memory.md for a ",
      "person to read. Kept 7 days; at most 5 per user."),
    h("div", { class: "actions" }, h("button", { type: "button", onclick: start }, "Export this user's memory")),
    open,
    job,
  );
}

function exportPath(view, exportId, ...rest) {
  return userPath(view, "exports", exportId, ...rest);
}

/** Follow an export until it is done, then list its files. */
async function showExport(view, into, exportId) {
  replaceParams({ export: exportId });
  await follow({
    into,
    load: async () => (await call("GET", exportPath(view, exportId))).body,
    show: (job) => exportView(view, into, job),
    ended: (job) => job.status !== "queued" && job.status !== "running",
    fail: problem,
  });
}

function exportView(view, into, job) {
  const status = h("div", { role: "status" });
  const progress = job.progress || {};
  return h("div", { class: "export" },
    h("p", {}, h("strong", {}, `Export: ${job.status}`)),
    facts("Export", [
      ["Export", text(job.export_id)],
      ["Asked by", text(job.requested_by)],
      ["Profile", text(job.profile_id)],
      ["Asked at", when(job.created_at)],
      ["Expires", when(job.expires_at)],
      ["Progress", `${(progress.records || 0).toLocaleString()} records${progress.kind ? `, writing ${progress.kind}` : ""}`],
      "complete" in job ? ["Complete", job.complete ? "yes" : "no: some kinds were left out (below)"] : null,
      job.error ? ["Error", text(job.error.code || job.error)] : null,
    ].filter(Boolean)),
    job.omitted && job.omitted.length ? h("details", {}, h("summary", {}, "Left out"), json(job.omitted)) : null,
    job.files ? h("table", {},
      h("caption", {}, "Files of this export"),
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "File"), h("th", { scope: "col" }, "Save"))),
      h("tbody", {}, job.files.map((name) => h("tr", {},
        h("th", { scope: "row" }, text(name)),
        h("td", {}, h("button", { type: "button", "aria-label": `Download ${name}`,
          onclick: () => download(view, job.export_id, name, status) }, "Download")))))) : null,
    h("div", { class: "actions" }, h("button", {
      type: "button", class: "danger", onclick: () => deleteExport(view, into, job.export_id),
    }, "Delete this export…")),
    status,
  );
}

async function download(view, exportId, name, status) {
  fill(status, `Downloading ${name}…`);
  try {
    saveFile(await fetchFile(exportPath(view, exportId, "files", name)), name);
    fill(status, `Saved ${name}.`);
  } catch (error) {
    fill(status, problem(error));
  }
}

async function deleteExport(view, into, exportId) {
  const yes = await confirmAction({
    title: "Delete this export",
    message: `Export ${exportId} of user ${view.user} and its files are deleted now.`,
    action: "Delete export",
  });
  if (!yes) return;
  try {
    await call("DELETE", exportPath(view, exportId));
  } catch (error) {
    fill(into, problem(error));
    return;
  }
  replaceParams({ export: null });
  fill(into, h("p", { role: "status" }, "Export ", text(exportId), " deleted."));
}
