// Review (docs/console.md "Review"): what waits for a person. The proposal queue with
// approve / edit / reject, replays whose patches are parked after a conflict with retry /
// discard, and each snapshot's replay status with its details and a redrive of a failed
// one. Each section loads on its own, so a section the caller's roles hide says so while
// the others still show.

import { call, path, query } from "../lib/api.js";
import { fill, h, json, table, text, when } from "../lib/dom.js";
import { prepared, problems, subschemaAt } from "../lib/schema.js";
import { confirmAction, hidden, pager, problem, section } from "../lib/ui.js";

export const id = "review";
export const title = "Review";

const SNAPSHOT_PAGE = 50; // snapshots per "Load more"
const DECIDERS = ["review", "admin"]; // roles that may decide a proposal (docs/proposals.md)
const WAITING = ["retrying", "review"]; // parked patch states an admin may act on

export async function render(view) {
  const sections = await Promise.all([proposals(view), conflicts(view), snapshots(view)]);
  return h("div", { class: "review" }, sections);
}

/** The user's routes: `/v1/tenants/{t}/users/{u}/…`, each segment encoded. */
function userPath(view, ...rest) {
  return path("v1", "tenants", view.tenant, "users", view.user, ...rest);
}

function snapshotPath(view, conversation, snapshot, ...rest) {
  return userPath(view, "snapshots", conversation, snapshot, ...rest);
}

function mayDecide(view) {
  return view.me.roles.some((role) => DECIDERS.includes(role));
}

/** A section whose content `load(body)` fills, reloadable; a 403 says what is hidden and why. */
async function reloadable(title, hiddenWhy, load) {
  const body = h("div", { class: "section-body" });
  const status = h("div", { class: "outcome", role: "status" });
  const reload = async (said) => {
    fill(status, said || "");
    try {
      await load(body, reload);
    } catch (error) {
      fill(body, error && error.hidden ? hiddenNote(hiddenWhy, error) : problem(error));
    }
  };
  await reload();
  return section(title, status, body);
}

/** A hidden section, said as such: what needs which role, and the server's words. */
function hiddenNote(why, error) {
  return h("div", {}, h("p", {}, why), hidden(error));
}

// -- the proposal queue ----------------------------------------------------------------------

async function proposals(view) {
  return reloadable("Proposals",
    "The proposal queue is hidden from you: listing it needs the read, review or admin role for this tenant and profile.",
    async (body, reload) => {
      const answer = await call("GET", userPath(view, "proposals") + query({ profile_id: view.profile }));
      const queue = answer.body.proposals || [];
      const schemas = schemaSource(view);
      fill(body,
        mayDecide(view) ? null : h("p", { class: "hidden-note", role: "note" },
          h("strong", {}, "Deciding is hidden from you. "),
          "Approving, editing or rejecting a proposal needs the review or admin role; you can read the queue only."),
        answer.body.more ? h("p", { class: "muted" }, "Some documents of a templated binding were not read (more than 100 in a namespace): their proposals are not listed.") : null,
        queue.length
          ? h("ol", { class: "proposals", "aria-label": "Proposals" },
            queue.map((item, n) => h("li", {}, proposalCard(view, item, n + 1, schemas, reload))))
          : h("p", {}, "No proposals wait for review."));
    });
}

/** The profile's schemas, read once per reading of the queue and only when an edit is checked. */
function schemaSource(view) {
  let answer = null;
  return () => {
    answer = answer || call("GET", path("v1", "profiles", view.profile)).then((r) => r.body);
    return answer;
  };
}

/** One proposal: what it would write where, who proposed it, and the decisions. */
function proposalCard(view, proposal, number, schemas, reload) {
  const item = proposal.item || {};
  const heading = `Proposal ${number}: ${item.op || "add"} at ${item.target_path || "?"}`;
  const note = h("input", { type: "text", maxlength: "500", autocomplete: "off", id: `note-${number}`, name: "note" });
  const editor = h("div", { class: "editor" });
  const expired = proposal.status === "expired";
  const facts = [
    ["Status", proposal.status],
    ["Document", `${proposal.namespace}/${proposal.path} (binding ${proposal.binding_id})`],
    ["Proposed by", item.proposed_by],
    ["Proposed at", when(item.proposed_at)],
    ["Expires", proposal.expires_at ? when(proposal.expires_at) : "never"],
    ["Confidence", item.confidence === null || item.confidence === undefined ? "—" : String(item.confidence)],
    item.reasons && item.reasons.length ? ["Held because", item.reasons.join(", ")] : null,
  ].filter(Boolean);
  const decide = (decision, body, onRefused) => send(view, proposal, decision, body, reload, onRefused);
  const buttons = mayDecide(view) ? h("div", { class: "actions" },
    h("button", {
      type: "button", disabled: expired,
      "aria-label": `Approve proposal ${number}`,
      onclick: () => approveOrReject(proposal, "approve", note.value, decide),
    }, "Approve"),
    item.op === "remove" ? null : h("button", {
      type: "button", disabled: expired,
      "aria-label": `Edit proposal ${number}`,
      onclick: () => openEditor(editor, proposal, number, schemas, note, decide),
    }, "Edit"),
    h("button", {
      type: "button", class: "danger",
      "aria-label": `Reject proposal ${number}`,
      onclick: () => approveOrReject(proposal, "reject", note.value, decide),
    }, "Reject"),
  ) : null;
  return h("article", { class: "proposal", "aria-label": heading },
    h("h3", {}, text(heading, "heading")),
    h("dl", { class: "facts" }, facts.flatMap(([term, value]) => [h("dt", {}, term), h("dd", {}, typeof value === "string" ? text(value) : value)])),
    h("p", { class: "label" }, "Candidate"),
    json(item.candidate),
    item.evidence ? h("details", {}, h("summary", {}, "Evidence"), json(item.evidence)) : null,
    expired ? h("p", { class: "muted" }, "Expired: it can only be rejected.") : null,
    mayDecide(view) ? h("div", { class: "note-field" }, h("label", { for: `note-${number}` }, "Note for the record (optional)"), note) : null,
    buttons,
    editor,
  );
}

async function approveOrReject(proposal, decision, note, decide) {
  const item = proposal.item || {};
  const approve = decision === "approve";
  const sure = await confirmAction({
    title: approve ? "Approve this proposal?" : "Reject this proposal?",
    message: approve
      ? `This writes the candidate (${item.op || "add"} at ${item.target_path}) into ${proposal.namespace}/${proposal.path}, as you.`
      : `This removes the proposal from ${proposal.namespace}/${proposal.path}; nothing else is written.`,
    action: approve ? "Approve" : "Reject",
  });
  if (sure) await decide(decision, note.trim() ? { note: note.trim() } : undefined);
}

/**
 * The decision, then the queue again with what happened said in its status line. A
 * refused decision is said there too, unless `onRefused` takes it (the editor keeps what
 * the person typed and shows the refusal beside it).
 */
async function send(view, proposal, decision, body, reload, onRefused) {
  const target = userPath(view, "proposals", proposal.proposal_id, decision) + query({ profile_id: view.profile });
  let answer;
  try {
    answer = await call("POST", target, { body });
  } catch (error) {
    if (onRefused) return onRefused(problem(error));
    return reload(problem(error));
  }
  return reload(`Proposal ${answer.body.status} by ${answer.body.reviewed_by}.`);
}

/**
 * The edit form: the candidate as JSON in a textarea, checked against the schema of the
 * section it goes into before anything is sent; errors are shown beside it.
 */
async function openEditor(editor, proposal, number, schemas, note, decide) {
  const item = proposal.item || {};
  const areaId = `edit-${number}`;
  const errorsId = `edit-errors-${number}`;
  const area = h("textarea", { id: areaId, rows: "10", spellcheck: "false", "aria-describedby": errorsId },
    JSON.stringify(item.candidate, null, 2));
  const errors = h("div", { id: errorsId, class: "edit-errors", "aria-live": "polite" });
  const sendButton = h("button", { type: "submit" }, "Check and send edit");
  const cancel = h("button", { type: "button", onclick: () => fill(editor) }, "Cancel");
  const form = h("form", { class: "edit-form", "aria-label": `Edit proposal ${number}` },
    h("label", { for: areaId }, `Edited candidate (JSON) for ${item.target_path}`),
    area, errors, h("div", { class: "actions" }, sendButton, cancel));
  fill(editor, form);
  area.focus();
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    sendButton.disabled = true;
    try {
      const checked = await checkEdit(area.value, proposal, schemas);
      area.setAttribute("aria-invalid", checked.problems.length ? "true" : "false");
      fill(errors, checked.problems.length ? problemList(checked.problems) : checked.note);
      if (checked.problems.length) return;
      const sure = await confirmAction({
        title: "Send this edit?",
        message: `This writes your edited candidate (${item.op || "add"} at ${item.target_path}) into ${proposal.namespace}/${proposal.path}, as you, and removes the proposal.`,
        action: "Send edit",
      });
      const trimmed = note.value.trim();
      const edit = { candidate: checked.value, ...(trimmed ? { note: trimmed } : {}) };
      if (sure) await decide("edit", edit, (refusal) => fill(errors, refusal));
    } finally {
      sendButton.disabled = false;
    }
  });
}

/**
 * `{value, problems, note}`: the typed JSON parsed and checked against the subschema of the
 * proposal's target in its binding's schema. `problems` empty means it may be sent.
 */
async function checkEdit(typed, proposal, schemas) {
  let value;
  try {
    value = JSON.parse(typed);
  } catch (error) {
    return { problems: [{ at: "", message: `Not JSON: ${error.message}` }] };
  }
  let source;
  try {
    source = await schemas();
  } catch (error) {
    const why = error && error.hidden ? "the profile's schemas are hidden from you" : `the profile could not be read (${error.message})`;
    return { value, problems: [], note: h("p", { class: "muted" }, `Not checked here: ${why}; the server checks it.`) };
  }
  const binding = (source.profile.document_bindings || []).find((b) => b.binding_id === proposal.binding_id);
  const root = binding && (source.schemas[binding.schema_id] || {})[binding.schema_version];
  if (!root) return { value, problems: [{ at: "", message: `No schema for binding ${proposal.binding_id} in profile ${source.profile_id}.` }] };
  const schema = prepared(structuredClone(root));
  const sub = subschemaAt(schema, proposal.item.target_path);
  if (sub === null) {
    return { value, problems: [], note: h("p", { class: "muted" }, "Not checked here: the schema at this target is not one the console walks; the server checks it.") };
  }
  return { value, problems: problems(schema, sub, value), note: h("p", { class: "muted" }, "Valid against the schema.") };
}

function problemList(found) {
  return h("div", { class: "problem", role: "alert" },
    h("strong", {}, "Not sent: the edit does not match the schema."),
    h("ul", {}, found.map((p) => h("li", {}, h("code", {}, text(p.at || "(the value)")), " ", text(p.message)))));
}

// -- parked replay conflicts -----------------------------------------------------------------

async function conflicts(view) {
  return reloadable("Parked replay conflicts",
    "Parked replay conflicts are hidden from you: listing and deciding them needs the admin role.",
    async (body, reload) => {
      const answer = await call("GET", userPath(view, "replays", "unresolved"));
      const replays = answer.body.replays || [];
      fill(body, replays.length
        ? replays.map((replay) => replayCard(view, replay, reload))
        : h("p", {}, "No replay has a parked patch."));
    });
}

/** One replay with parked patches: each waiting patch with its conflict and planned ops. */
function replayCard(view, replay, reload) {
  const label = `Conversation ${replay.conversation_id}, snapshot ${replay.snapshot_id}`;
  const parked = (replay.unresolved || []);
  return h("article", { class: "replay", "aria-label": label },
    h("h3", {}, text(label, "heading")),
    h("p", {}, "Replay ", text(replay.replay_id), " is ", h("strong", {}, replay.status), ", updated ", when(replay.updated_at), "."),
    parked.map((entry) => parkedPatch(view, replay, entry, reload)),
  );
}

function parkedPatch(view, replay, entry, reload) {
  const index = entry.patch_index;
  const planned = (replay.patches || []).find((p, n) => (p.patch_index ?? n) === index) || null;
  const waiting = WAITING.includes(entry.state);
  const where = planned ? `${planned.target_path} (binding ${planned.target_binding_id})` : "?";
  const act = async (action) => {
    const retry = action === "retry";
    const sure = await confirmAction({
      title: retry ? `Retry patch ${index}?` : `Discard patch ${index}?`,
      message: retry
        ? `This applies the parked patch's ops to the latest version of ${where} now, checked like any write.`
        : `This drops the parked patch: what it would have written to ${where} is not written, and the replay reads partially applied.`,
      action: retry ? "Retry" : "Discard",
    });
    if (!sure) return;
    try {
      const answer = await call("POST", snapshotPath(view, replay.conversation_id, replay.snapshot_id, "replay", "patches", String(index), action));
      await reload(`Patch ${index} ${retry ? "retried" : "discarded"}: the replay is now ${answer.body.status}.`);
    } catch (error) {
      await reload(problem(error));
    }
  };
  return h("section", { class: "parked", "aria-label": `Patch ${index} of ${replay.conversation_id}/${replay.snapshot_id}` },
    h("h4", {}, `Patch ${index}: ${entry.state}`),
    h("dl", { class: "facts" },
      h("dt", {}, "Target"), h("dd", {}, text(where)),
      h("dt", {}, "Attempts"), h("dd", {}, String(entry.attempts ?? "—")),
      entry.next_retry_at ? [h("dt", {}, "Next automatic retry"), h("dd", {}, when(entry.next_retry_at))] : null,
      entry.conflict ? [h("dt", {}, "Conflict"), h("dd", {}, conflictText(entry.conflict))] : null,
      entry.discarded_by ? [h("dt", {}, "Discarded by"), h("dd", {}, text(entry.discarded_by))] : null,
      entry.error ? [h("dt", {}, "Error"), h("dd", {}, text(entry.error))] : null,
    ),
    planned ? h("details", {}, h("summary", {}, "Planned ops"), json(planned.ops)) : null,
    waiting ? h("div", { class: "actions" },
      h("button", { type: "button", onclick: () => act("retry") }, `Retry patch ${index}`),
      h("button", { type: "button", class: "danger", onclick: () => act("discard") }, `Discard patch ${index}`),
    ) : null,
  );
}

function conflictText(conflict) {
  const parts = [conflict.path ? `at ${conflict.path}` : null, conflict.change_id ? `change ${conflict.change_id}` : null, conflict.reason || null];
  return text(parts.filter(Boolean).join(", ") || JSON.stringify(conflict));
}

// -- replay status per snapshot --------------------------------------------------------------

async function snapshots(view) {
  return reloadable("Snapshots and their replays",
    "The user's snapshots are hidden from you: listing them needs the snapshots or admin role (a transcript's existence is about the conversation itself).",
    async (body, reload) => {
      // the first page is read here, so a 403 hides the whole section rather than the list
      const first = await snapshotPage(view, null);
      let firstUsed = false;
      fill(body, pager({
        label: "Snapshots",
        empty: "No snapshots.",
        load: async (cursor) => {
          if (!firstUsed) { firstUsed = true; return first; }
          return snapshotPage(view, cursor);
        },
        row: (snapshot) => snapshotRow(view, snapshot, reload),
      }));
    });
}

async function snapshotPage(view, cursor) {
  const answer = await call("GET", userPath(view, "snapshots") + query({ limit: SNAPSHOT_PAGE, after: cursor }));
  return { items: answer.body.snapshots || [], next: answer.body.after || null };
}

/** A snapshot: its ids, when it was stored, its replay's status, and a details button. */
function snapshotRow(view, snapshot, reload) {
  const name = `${snapshot.conversation_id}/${snapshot.snapshot_id}`;
  const details = h("div", { class: "replay-details" });
  const status = snapshot.replay_status || "no replay record";
  const show = h("button", {
    type: "button",
    "aria-expanded": "false",
    "aria-label": `Replay details of ${name}`,
    onclick: async () => {
      if (show.getAttribute("aria-expanded") === "true") {
        show.setAttribute("aria-expanded", "false");
        fill(details);
        return;
      }
      show.setAttribute("aria-expanded", "true");
      fill(details, h("p", { class: "busy", role: "status" }, "Loading…"));
      try {
        const answer = await call("GET", snapshotPath(view, snapshot.conversation_id, snapshot.snapshot_id, "replay"));
        fill(details, replayDetails(view, answer.body, reload));
      } catch (error) {
        fill(details, error && error.hidden
          ? hiddenNote("This replay's status is hidden from you: it needs the read role and the replay's profile.", error)
          : problem(error));
      }
    },
  }, "Details");
  return h("div", { class: "snapshot", "data-status": status },
    h("span", { class: "snapshot-name" }, text(name)), " · ",
    h("span", { class: `replay-status status-${String(status).replace(/[^a-z_]/g, "")}` }, status), " · stored ",
    when(snapshot.stored_at), " · ", `${Number(snapshot.size || 0).toLocaleString()} bytes`, " ",
    show, details);
}

function errorText(error) {
  if (!error) return "none";
  if (typeof error === "string") return error;
  return error.code ? `${error.code}: ${error.message || ""}` : JSON.stringify(error);
}

/** A replay record as a person reads it, and a redrive when it failed. */
function replayDetails(view, replay, reload) {
  const rows = [
    ["Status", replay.status],
    ["Replay", replay.replay_id],
    ["Source", replay.source],
    ["Uploaded by", replay.uploaded_by],
    ["Profile", replay.profile_id],
    ["Extractor", replay.extractor ? `${replay.extractor.name} ${replay.extractor.version}` : "—"],
    ["Attempts", String(replay.attempts ?? "—")],
    ["Created", when(replay.created_at)],
    ["Updated", when(replay.updated_at)],
    ["Error", errorText(replay.error)],
  ];
  const changes = replay.changes || [];
  const rejected = replay.rejected || [];
  const unresolved = replay.unresolved || [];
  const redrive = async () => {
    const sure = await confirmAction({
      title: "Redrive this replay?",
      message: "This queues the failed replay again; a stored plan is kept, so what was written is not written again.",
      action: "Redrive",
    });
    if (!sure) return;
    try {
      const answer = await call("POST", snapshotPath(view, replay.conversation_id, replay.snapshot_id, "replay", "redrive"));
      await reload(`Replay of ${replay.conversation_id}/${replay.snapshot_id} queued again: ${answer.body.status}.`);
    } catch (error) {
      await reload(problem(error));
    }
  };
  return h("div", { class: "details-body" },
    h("dl", { class: "facts" }, rows.flatMap(([term, value]) => [h("dt", {}, term), h("dd", {}, typeof value === "string" ? text(value) : value ?? "—")])),
    h("p", {}, `${(replay.events || []).length} events, ${changes.length} changes, ${rejected.length} rejected, ${unresolved.length} parked.`),
    changes.length ? table(`Changes written by replay ${replay.replay_id}`, [
      ["Patch", (c) => String(c.patch_index)],
      ["Document", (c) => text(`${c.namespace}/${c.path}`)],
      ["Change", (c) => text(c.change_id)],
      ["Notes", (c) => text([c.rebased_from ? "rebased" : null, c.retried ? `retried ${c.retried}` : null,
        c.resolved_by ? `resolved by ${c.resolved_by}` : null,
        c.redirected_ops && c.redirected_ops.length ? `${c.redirected_ops.length} ops to review` : null].filter(Boolean).join(", ") || "—")],
    ], changes) : null,
    rejected.length ? table(`Parts rejected in replay ${replay.replay_id}`, [
      ["Part", (r) => `${r.part} ${r.index}`],
      ["Code", (r) => text(r.code)],
      ["Reason", (r) => text(r.reason)],
    ], rejected) : null,
    replay.status === "failed" && view.me.roles.includes("admin")
      ? h("div", { class: "actions" }, h("button", { type: "button", onclick: redrive }, "Redrive replay"))
      : null,
    h("details", {}, h("summary", {}, "The whole record (JSON)"), json(replay)),
  );
}
