// History (docs/console.md "History"): a user's memory through time. One timeline of
// the changes of every document (or of one, `?doc=namespace/path`), newest first, merged
// from each document's `:history` pages and read a page at a time; each change opens to
// its diff, the document as it was after it, and revert / undo. A point-in-time picker
// reads a document as it was at any instant.

import { call, idempotencyKey } from "../lib/api.js";
import { fill, h, text, when } from "../lib/dom.js";
import {
  allDocuments, bindingsOf, documentFacts, documentPath, freshnessOf, getDocument, jsonDetails, readable,
  row, whyControl,
} from "../lib/documents.js";
import { confirmAction, hidden, pager, problem, section } from "../lib/ui.js";
import { loadProfile } from "./memory.js";

export const id = "history";
export const title = "History";

const TIMELINE_PAGE = 25; // changes shown per "Load more"
const HISTORY_PAGE = 50; // records read per `:history` call of one document
let flash = null; // what the last revert or undo did, said once after the page reloads
let serial = 0; // for unique element ids

export async function render(view) {
  const profile = await loadProfile(view);
  const bindings = bindingsOf(profile);
  const byId = new Map(bindings.map((b) => [b.binding_id, b]));
  const listed = await allDocuments(view, bindings);
  const chosen = view.params.get("doc") || "";
  const documents = listed.documents.filter((d) => !chosen || d.doc === chosen);
  if (chosen && !documents.length) documents.push({ doc: chosen, binding_id: null, updated_at: null });
  const notes = h("div", { class: "notes" },
    listed.hidden.map(({ namespace, error }) => hiddenNote(`The documents of namespace ${namespace}`, error)),
    revertNotes(view.me, bindings));
  const said = flash;
  flash = null;
  const bindingOf = (doc) => byId.get((listed.documents.find((d) => d.doc === doc) || {}).binding_id);
  const context = { view, profile, byId, bindingOf, notes };
  return h("div", { class: "history" },
    said ? h("p", { class: "done", role: "status" }, said) : null,
    notes,
    filterForm(view, listed.documents, chosen),
    section("Timeline",
      h("p", { class: "muted" }, chosen ? ["Changes of ", h("code", {}, text(chosen)), ", newest first."]
        : "Changes of every document, newest first."),
      timelineList(context, documents)),
    section("The document at a point in time", pointInTime(context, listed.documents, chosen)));
}

/** Who may revert: roles `read` and `write` and one of the binding's `revert_roles`. */
function mayRevert(me, binding) {
  const roles = new Set(me.roles);
  const needed = (binding && binding.revert_roles) || ["admin"];
  return roles.has("read") && roles.has("write") && needed.some((r) => roles.has(r));
}

/** Why revert and undo are not offered on some bindings, said once at the top. */
function revertNotes(me, bindings) {
  const refused = bindings.filter((b) => !mayRevert(me, b));
  if (!refused.length) return null;
  return h("p", { class: "hidden-note", role: "note" },
    h("strong", {}, "Revert and undo are not offered to you "),
    `on ${refused.map((b) => b.binding_id).join(", ")}: they need the roles read and write and one of `,
    `${[...new Set(refused.flatMap((b) => b.revert_roles || ["admin"]))].join(", ")} (the bindings' revert_roles). `,
    "You are ", h("bdi", {}, me.caller_id), ` with ${me.roles.join(", ") || "no roles"}.`);
}

function hiddenNote(what, error) {
  return hidden({ message: `${what}: ${error.message}`, code: error.code });
}

/** Choosing one document's history, or all of them. */
function filterForm(view, documents, chosen) {
  const select = h("select", { id: "history-doc", name: "doc" },
    h("option", { value: "" }, "All documents"),
    documents.map((d) => h("option", { value: d.doc, selected: d.doc === chosen }, d.doc)));
  const form = h("form", { class: "inline", "aria-label": "Filter the timeline" },
    h("label", { for: "history-doc" }, "Document"), select,
    h("button", { type: "submit" }, "Show"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    view.go("history", { doc: select.value });
  });
  return form;
}

/**
 * The changes of `documents`, newest first, without reading any document's whole
 * history: each document is a stream of its `:history` pages, and the next change is
 * the newest head among the streams. A stream not read yet stands in with its listed
 * `updated_at` (its newest change's time), so a document is read only once its turn
 * may have come.
 */
function merged(context, documents) {
  const streams = documents.map((d) => ({
    doc: d.doc, binding: context.byId.get(d.binding_id), etag: d.etag || null,
    buffer: [], before: null, read: false, done: false,
    bound: d.updated_at ? Date.parse(d.updated_at) : Infinity,
  }));
  const head = (s) => (s.buffer.length ? Date.parse(s.buffer[0].timestamp) : s.bound);
  const live = (s) => s.buffer.length || !s.done;
  const read = async (s) => {
    try {
      const answer = (await getDocument(context.view, s.doc, ":history", { limit: HISTORY_PAGE, before: s.before })).body;
      if (!s.read) s.etag = answer.etag;
      s.read = true;
      s.buffer.push(...answer.changes);
      s.before = answer.next_before;
      s.done = !answer.next_before;
      s.truncated = Boolean(answer.truncated);
    } catch (error) {
      s.done = true;
      if (error.code === "DOCUMENT_NOT_FOUND") return;
      if (!error.hidden) throw error;
      context.notes.appendChild(hiddenNote(`The history of ${s.doc}`, error));
    }
  };
  return async (count) => {
    const items = [];
    while (items.length < count) {
      let best = null;
      for (const s of streams) if (live(s) && (!best || head(s) > head(best))) best = s;
      if (!best) break;
      if (!best.buffer.length) await read(best);
      else items.push({ stream: best, change: best.buffer.shift() });
    }
    return { items, next: streams.some(live) ? "more" : null };
  };
}

function timelineList(context, documents) {
  if (!documents.length) return h("p", { class: "muted" }, "No document has been written yet.");
  const next = merged(context, documents);
  return pager({
    label: "Changes, newest first",
    empty: "No change.",
    load: () => next(TIMELINE_PAGE),
    row: (item) => changeRow(context, item),
  });
}

const OPERATIONS = { create: "created", patch: "patched", replace: "replaced" };

/** One change: a summary line; opened, its details, diff and actions (built then). */
function changeRow(context, { stream, change }) {
  const summary = h("summary", {},
    when(change.timestamp), " · ", h("code", {}, text(stream.doc)), " ",
    OPERATIONS[change.operation] || text(change.operation), " by ", text(change.actor),
    " · ", text(change.reason),
    change.reverted_to ? [" to ", h("code", {}, text(change.reverted_to))] : null,
    change.undone ? [" undoing ", h("code", {}, text(change.undone))] : null);
  const details = h("details", { class: "change", "data-change": change.change_id }, summary);
  details.addEventListener("toggle", () => {
    if (details.open && details.children.length === 1) details.appendChild(changeBody(context, stream, change));
  });
  return details;
}

function changeBody(context, stream, change) {
  const { view } = context;
  const version = h("div", { class: "version" });
  return h("div", { class: "change-body" },
    h("dl", { class: "kv" },
      row("Change", h("code", {}, text(change.change_id))),
      row("Previous", change.prev_change_id ? h("code", {}, text(change.prev_change_id)) : "none (this change created the document)"),
      row("Written by", text(change.actor)),
      row("Reason", text(change.reason)),
      row("Confidence", change.confidence === null || change.confidence === undefined ? "—" : text(change.confidence)),
      change.evidence ? row("Evidence", text(change.evidence)) : null),
    h("h3", {}, "What changed"),
    diffView(view, stream.doc, change),
    h("div", { class: "actions" },
      h("button", { type: "button", onclick: () => showVersion(context, stream.doc, change.change_id, version) },
        "View the document as of this change")),
    version,
    revertControls(context, stream, change));
}

/** The change's diff (`:diff?from=<previous>&to=<this>`), or its ops when it created the document. */
function diffView(view, doc, change) {
  const out = h("div", { class: "diff-wrap" }, h("p", { class: "busy" }, "Loading the diff…"));
  if (!change.prev_change_id) {
    fill(out, h("p", { class: "muted" }, "Created from the binding's starting content with these ops:"),
      opsList(change.ops || []));
    return out;
  }
  getDocument(view, doc, ":diff", { from: change.prev_change_id, to: change.change_id }).then(
    (answer) => fill(out, opsList(answer.body.ops)),
    (error) => fill(out, problem(error)));
  return out;
}

const OP_CLASS = { add: "diff-add", remove: "diff-remove", replace: "diff-replace", move: "diff-move", copy: "diff-add" };

/** RFC 6902 ops as a list: op, path, value (each as untrusted text). */
export function opsList(ops) {
  if (!ops.length) return h("p", { class: "muted" }, "No change to the content.");
  return h("ul", { class: "diff" }, ops.map((op) => h("li", { class: OP_CLASS[op.op] || "diff-other" },
    h("strong", { class: "op" }, op.op), " ", h("code", {}, text(op.path)),
    op.from !== undefined ? [" from ", h("code", {}, text(op.from))] : null,
    op.value !== undefined ? [" ", text(op.value)] : null)));
}

/** The document as it was after a change or at an instant (`GET {doc}?as_of=`). */
async function showVersion(context, doc, asOf, out, level = 4) {
  const { view, profile } = context;
  const binding = context.bindingOf(doc);
  fill(out, h("p", { class: "busy", role: "status" }, "Reading…"));
  try {
    const answer = (await getDocument(view, doc, "", { as_of: asOf })).body;
    const { document } = answer;
    fill(out, h("div", { class: "as-of", "aria-label": `${doc} as of ${asOf}`, role: "region" },
      h("p", {}, h("strong", {}, "As of "), h("code", {}, text(asOf)), ": the version of change ",
        h("code", {}, text(answer.change_id)), "."),
      documentFacts(document, null, binding),
      h("p", { class: "muted" }, "The latest version's ETag, which a revert sends: ", h("code", {}, text(answer.latest_etag))),
      readable(document.content, {
        why: whyControl(view, doc, answer.change_id),
        freshness: binding ? freshnessOf(profile, binding) : null,
      }, level),
      jsonDetails("As JSON", document, true)));
  } catch (error) {
    fill(out, problem(error));
  }
}

/** Revert to this version and undo this change, each asked first; or why they are not offered. */
function revertControls(context, stream, change) {
  const { view } = context;
  if (!mayRevert(view.me, stream.binding)) {
    return h("p", { class: "muted" }, "Revert and undo are not offered: they need the role ",
      ((stream.binding && stream.binding.revert_roles) || ["admin"]).join(" or "), ".");
  }
  const fieldId = `revert-reason-${++serial}`;
  const reason = h("input", { id: fieldId, name: "reason", type: "text", autocomplete: "off" });
  const out = h("div", { "aria-live": "polite" });
  const act = (body, what) => async () => {
    const ok = await confirmAction({
      title: what.title,
      message: what.message,
      action: what.action,
    });
    if (!ok) return;
    fill(out, h("p", { class: "busy", role: "status" }, "Writing…"));
    const sent = { ...body, profile_id: view.profile };
    if (reason.value.trim()) sent.reason = reason.value.trim();
    try {
      const answer = await call("POST", documentPath(view, stream.doc, ":revert"), {
        body: sent,
        headers: { "If-Match": stream.etag, "Idempotency-Key": idempotencyKey() },
      });
      if (answer.body.unchanged) {
        fill(out, h("p", { class: "done", role: "status" }, "Nothing to write: the document already holds that content."));
        return;
      }
      flash = `${what.done} ${stream.doc}: new change ${answer.body.document ? answer.body.document.change_id : ""}.`;
      view.refresh();
    } catch (error) {
      fill(out, problem(error), conflictNote(error));
    }
  };
  return h("div", { class: "revert" },
    h("label", { for: fieldId }, "Reason (optional)"), reason,
    h("div", { class: "actions" },
      h("button", {
        type: "button",
        onclick: act({ to_change_id: change.change_id }, {
          title: "Revert to this version?",
          message: `Write ${stream.doc} back as it was after change ${change.change_id}. This is a new change: the history keeps everything.`,
          action: "Revert",
          done: "Reverted",
        }),
      }, "Revert to this version"),
      change.prev_change_id ? h("button", {
        type: "button",
        onclick: act({ undo_change_id: change.change_id }, {
          title: "Undo this change?",
          message: `Apply the inverse of change ${change.change_id} to the latest version of ${stream.doc}. Later changes stay.`,
          action: "Undo",
          done: "Undid a change of",
        }),
      }, "Undo this change") : null),
    out);
}

/** What to do after a refused revert or undo. */
function conflictNote(error) {
  if (error.code === "ETAG_MISMATCH") return h("p", {}, "The document changed since this page was read: reload it and try again.");
  if (error.code === "UNDO_CONFLICT" && error.details.conflict) {
    const conflict = error.details.conflict;
    return h("p", {}, "A later change touched what it wrote: ",
      h("code", {}, text(conflict.change_id || "")), " at ", h("code", {}, text(conflict.path || "")),
      conflict.reason ? [" (", text(conflict.reason), ")"] : null, ". Revert to a version instead.");
  }
  return null;
}

/** A datetime input that reads a document as it was at that instant (RFC 3339, UTC). */
function pointInTime(context, documents, chosen) {
  const select = h("select", { id: "as-of-doc", name: "doc", required: true },
    documents.map((d) => h("option", { value: d.doc, selected: d.doc === chosen }, d.doc)));
  const input = h("input", { id: "as-of-time", name: "at", type: "datetime-local", step: 1, required: true });
  const out = h("div", { "aria-live": "polite" });
  const form = h("form", { class: "inline", "aria-label": "Read a document at a point in time" },
    h("label", { for: "as-of-doc" }, "Document"), select,
    h("label", { for: "as-of-time" }, "Point in time (your local time)"), input,
    h("button", { type: "submit" }, "Read"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const instant = new Date(input.value);
    if (Number.isNaN(instant.getTime())) return;
    showVersion(context, select.value, instant.toISOString(), out, 3);
  });
  if (!documents.length) return h("p", { class: "muted" }, "No document has been written yet.");
  return h("div", {}, form, out);
}
