// Governance: forgetting the user or one conversation (typed confirmation), the job
// followed to its receipt (docs/console.md "Governance").

import { ApiError, call, path } from "../../lib/api.js";
import { fill, h, json, text, when } from "../../lib/dom.js";
import { follow } from "../../lib/jobs.js";
import { replaceParams } from "../../lib/route.js";
import { confirmAction, problem, section } from "../../lib/ui.js";
import { facts, roleHidden, userPath } from "./shared.js";

/** The phases a job goes through, in order (docs/forgetting.md "Job states"). */
const USER_PHASES = ["deleting", "verifying", "finishing"];
const CONVERSATION_PHASES = ["snapshots", "replays", "events", "documents", "finishing"];

export async function forgetSection(view, roles) {
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
  Promise.all(shown); // followed in the background: the page shows at once, the jobs fill in
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
    live: view.live,
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
