// Events (docs/console.md "Events"): the user's event digests, listed a page at a time
// in the order they were recorded, or searched with words and filters; each event's
// stored record on demand.
//
// The filters live in the route (`#/t/u/events?q=…&service=…`), so a search can be
// reloaded and shared; the form navigates, and the page renders what the route says.

import { call, path, query } from "../lib/api.js";
import { fill, h, json, text, when } from "../lib/dom.js";
import { fields, pager, problem, section } from "../lib/ui.js";

export const id = "events";
export const title = "Events";

/** Page sizes offered; the listing takes up to 500, a search up to 100 in all. */
const SIZES = ["20", "50", "100"];
/** A search answers its best `top_k` (at most 100) and has no cursor beyond them. */
const SEARCH_MAX = 100;
/** The route parameters that make a search (the rest, `conversation`, is the listing's). */
const SEARCH_FILTERS = ["q", "from", "to", "service", "source", "project", "keywords"];

export async function render(view) {
  const filters = Object.fromEntries(view.params.entries());
  const limit = SIZES.includes(filters.limit) ? Number(filters.limit) : 50;
  const searching = SEARCH_FILTERS.some((name) => filters[name]);
  return h("div", {},
    section("Find events", form(view, filters, limit)),
    section(searching ? "Search results" : "All events", results(view, filters, limit, searching)),
  );
}

/** The filter form; submitting it navigates to the route holding its values. */
function form(view, filters, limit) {
  const input = (name, label, attributes = {}) => h("div", { class: "field" },
    h("label", { for: `ev-${name}` }, label),
    h("input", { id: `ev-${name}`, name, value: filters[name] || "", autocomplete: "off", ...attributes }));
  const size = h("select", { id: "ev-limit", name: "limit" },
    SIZES.map((n) => h("option", { value: n, selected: Number(n) === limit }, n)));
  const element = h("form", { class: "filters", "aria-label": "Event filters" },
    input("q", "Search text", { type: "search", maxlength: "1000" }),
    input("from", "From (local time)", { type: "datetime-local", step: "1" }),
    input("to", "Until (local time, not included)", { type: "datetime-local", step: "1" }),
    input("service", "Services (comma-separated)"),
    input("source", "Source types (comma-separated)"),
    input("project", "Projects (comma-separated)"),
    input("keywords", "Keywords (comma-separated)"),
    input("conversation", "Conversation (listing only)"),
    h("div", { class: "field" }, h("label", { for: "ev-limit" }, "Per page"), size),
    h("div", { class: "actions" },
      h("button", { type: "submit" }, "Find"),
      h("button", { type: "button", onclick: () => view.go(id, {}) }, "Clear")),
    h("p", { class: "muted" },
      "With words or filters the events are searched (best first, at most 100); ",
      "without, all of them are listed in the order they were recorded. ",
      "A conversation filters the listing only: search has no conversation filter."),
  );
  element.addEventListener("submit", (event) => {
    event.preventDefault();
    view.go(id, fields(element));
  });
  return element;
}

/** The listing or the search results, paged with "Load more". */
function results(view, filters, limit, searching) {
  if (searching && filters.conversation) {
    return problem({ code: "CONSOLE_FILTERS",
      message: "Search cannot filter by conversation. Clear the conversation, or the words and other filters." });
  }
  let body;
  try {
    body = searching ? searchBody(filters) : null;
  } catch (error) {
    return problem(error);
  }
  const base = path("v1", "tenants", view.tenant, "users", view.user);
  const seen = new Set(); // event ids a search has shown: a re-ranked answer repeats none
  const load = searching
    ? (cursor) => searchPage(base, body, cursor || 0, limit, seen)
    : (cursor) => listPage(base, filters.conversation, cursor, limit);
  return pager({
    load,
    row: (hit) => eventRow(view, base, hit),
    empty: searching ? "No event matches." : "This user has no events.",
    label: searching ? "Search results" : "Events",
  });
}

/** One page of the plain listing (event id order; a page may be short yet not the last). */
async function listPage(base, conversation, after, limit) {
  const answer = await call("GET", `${base}/events${query({ limit, after, conversation_id: conversation })}`);
  return { items: answer.body.events.map((event) => ({ event })), next: answer.body.after };
}

/**
 * The next results of a search. The API has no cursor for search, only `top_k`: each
 * "Load more" asks for more of the best (up to 100) and appends those not yet shown
 * (by event id: a re-ranked answer neither repeats nor, past the count, skips one).
 */
async function searchPage(base, body, shown, limit, seen) {
  const topK = Math.min(shown + limit, SEARCH_MAX);
  const answer = await call("POST", `${base}/events:search`, { body: { ...body, top_k: topK } });
  const hits = answer.body.results;
  const fresh = hits.filter((hit) => !seen.has(hit.event.event_id)); // events written since may re-rank
  for (const hit of fresh) seen.add(hit.event.event_id);
  return { items: fresh, next: hits.length === topK && topK < SEARCH_MAX ? topK : null };
}

/** The search request of the route's filters (docs/api.md events:search). */
function searchBody(filters) {
  const body = {};
  if (filters.q) body.text = filters.q;
  const from = instant(filters.from, "From");
  const to = instant(filters.to, "Until");
  if (from || to) body.time_range = { ...(from && { from }), ...(to && { to }) };
  for (const [param, member] of [["service", "service_id"], ["source", "source_type"], ["project", "project_id"]]) {
    const values = list(filters[param]);
    if (values.length) body[member] = values.length === 1 ? values[0] : values;
  }
  const keywords = list(filters.keywords);
  if (keywords.length) body.keywords = keywords;
  return body;
}

/** A datetime-local value (the reader's time) as an RFC 3339 instant in UTC. */
function instant(value, label) {
  if (!value) return null;
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) throw { code: "CONSOLE_FILTERS", message: `${label} is not a date and time.` };
  return date.toISOString();
}

function list(value) {
  return (value || "").split(",").map((part) => part.trim()).filter(Boolean);
}

/** The conversation an event was learned from: its evidence, else its snapshot's. */
export function conversationOf(event) {
  const evidence = event.evidence || {};
  if (typeof evidence.conversation_id === "string") return evidence.conversation_id;
  const uri = event.snapshot_uri || evidence.snapshot_uri;
  const match = typeof uri === "string" ? /\/snapshots\/([^/]+)\//.exec(uri) : null;
  return match ? match[1] : null;
}

/** One event: its digest, when, conversation, service, score, and its record on demand. */
function eventRow(view, base, hit) {
  const { event } = hit;
  const conversation = conversationOf(event);
  const details = h("div", { class: "event-details", hidden: true });
  const toggle = h("button", { type: "button", "aria-expanded": "false" }, "Details");
  toggle.addEventListener("click", () => showDetails(base, event.event_id, toggle, details));
  return h("article", { class: "event", "aria-label": `Event ${event.event_id}` },
    h("p", { class: "event-digest" }, text(event.digest)),
    h("p", { class: "event-meta muted" },
      when(event.timestamp),
      " · service ", text(event.service_id),
      " · conversation ", conversation ? text(conversation) : "none",
      " · source ", text(event.source_type),
      typeof hit.score === "number" ? ` · score ${hit.score.toFixed(3)}` : null),
    h("div", { class: "actions" },
      toggle,
      conversation ? h("button", { type: "button", onclick: () => view.go(id, { conversation }) },
        "Only this conversation") : null),
    details,
  );
}

/** GET the event's stored record into `details` (again on each opening: it may be gone). */
async function showDetails(base, eventId, toggle, details) {
  const open = toggle.getAttribute("aria-expanded") === "true";
  toggle.setAttribute("aria-expanded", String(!open));
  details.hidden = open;
  if (open) return;
  fill(details, h("p", { class: "busy", role: "status" }, "Loading…"));
  try {
    const answer = await call("GET", `${base}/events/${encodeURIComponent(eventId)}`);
    fill(details, json(answer.body));
  } catch (error) {
    fill(details, problem(error));
  }
}
