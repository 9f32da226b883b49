// A user's documents as the Memory and History pages show them (docs/console.md
// "Memory"): where a document lives in the API, what the profile says about it (its
// limits, its freshness rules, who may revert it), and its content rendered readably.
// Every value is memory, so untrusted: it is shown with text()/json() only.

import { call, path, query } from "./api.js";
import { fill, h, json, text, when } from "./dom.js";
import { problem } from "./ui.js";

/** The profile's bindings, in read-priority order. */
export function bindingsOf(profile) {
  return [...(profile.document_bindings || [])]
    .sort((a, b) => (a.read_priority ?? 0) - (b.read_priority ?? 0));
}

/** A binding's address: `namespace/path` or `namespace/{template}`. */
export function bindingPlace(binding) {
  return `${binding.namespace}/${binding.path || binding.path_template}`;
}

/** The API path of a document (`doc` is `namespace/path`, path segments kept apart). */
export function documentPath(view, doc, suffix = "") {
  const [namespace, ...rest] = doc.split("/");
  return path("v1", "tenants", view.tenant, "users", view.user, "documents", namespace, ...rest) + suffix;
}

/** The API path of a namespace's listing (trailing slash: the listing, not a document). */
export function listingPath(view, namespace) {
  return path("v1", "tenants", view.tenant, "users", view.user, "documents", namespace) + "/";
}

/** GET of a document route (`suffix` `:history`, `:why`…) with the view's profile. */
export function getDocument(view, doc, suffix = "", params = {}) {
  return call("GET", documentPath(view, doc, suffix) + query({ ...params, profile_id: view.profile }));
}

/**
 * Every document of the namespaces the bindings live in, page after page of the
 * listing: `[{doc, path, etag, updated_at, binding_id}]`, plus `hidden` errors of the
 * namespaces the caller may not list.
 */
export async function allDocuments(view, bindings) {
  const documents = [];
  const hidden = [];
  for (const namespace of new Set(bindings.map((b) => b.namespace))) {
    let continuation = null;
    try {
      do {
        const page = (await call("GET", listingPath(view, namespace)
          + query({ limit: 100, continuation, profile_id: view.profile }))).body;
        for (const item of page.documents) documents.push({ ...item, doc: `${namespace}/${item.path}` });
        continuation = page.continuation;
      } while (continuation);
    } catch (error) {
      if (!error.hidden) throw error;
      hidden.push({ namespace, error });
    }
  }
  return { documents, hidden };
}

/**
 * The size `max_chars` counts: the characters (code points) of the compact JSON of the
 * whole stored envelope (memnet.domain.envelope.char_count). An approximation: the
 * browser writes some numbers differently (`1.0` as `1`) and puts integer-like member
 * names first.
 */
export function charCount(document) {
  let count = 0;
  for (const _ of JSON.stringify(document)) count += 1;
  return count;
}

/** What a JSON Pointer segment becomes (RFC 6901: `~` as `~0`, `/` as `~1`). */
export function pointerSegment(key) {
  return String(key).replace(/~/g, "~0").replace(/\//g, "~1");
}

/** The value at a content pointer (`/a/0`), or undefined. */
export function at(content, pointer) {
  let value = content;
  for (const raw of pointer.split("/").slice(1)) {
    const key = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (value === null || typeof value !== "object" || !(key in value)) return undefined;
    value = value[key];
  }
  return value;
}

const DAY = 86_400_000;
const TTL_CLASSES = { short: 30, medium: 180, long: 730, permanent: null };

/**
 * Why an item is stale under the profile's `freshness_rules` (memnet.domain.freshness
 * why_stale): `expired`, `ttl_class`, `max_age`, or null when it is fresh.
 */
export function whyStale(item, rules, now = Date.now()) {
  if (!item || typeof item !== "object" || Array.isArray(item)) return null;
  const expires = instant(item[rules.expires_field || "expires_at"]);
  if (expires !== null && now >= expires) return "expired";
  const verified = instant(item[rules.verified_field || "last_verified_at"]);
  if (verified === null) return null;
  const classes = rules.ttl_classes || TTL_CLASSES;
  const ttlClass = item[rules.ttl_class_field || "ttl_class"];
  if (ttlClass !== undefined && ttlClass !== null && Object.hasOwn(classes, ttlClass)) {
    const days = classes[ttlClass];
    return days !== null && now > verified + days * DAY ? "ttl_class" : null;
  }
  const maxAge = rules.max_age_days;
  return maxAge !== undefined && maxAge !== null && now > verified + maxAge * DAY ? "max_age" : null;
}

function instant(value) {
  if (typeof value !== "string") return null;
  const time = Date.parse(value);
  return Number.isNaN(time) ? null : time;
}

const STALE = {
  expired: "stale: past its expiry",
  ttl_class: "stale: older than its class allows",
  max_age: "stale: not verified within the profile's maximum age",
};

/**
 * A document's content rendered readably: each top-level member a heading (level
 * `level`), arrays as lists, objects as key/value rows. `options.why(pointer)` makes
 * the "why" control of a value or item; `options.freshness` is `{sections, rules}`, the
 * profile's freshness rules for this binding.
 */
export function readable(content, options = {}, level = 4) {
  if (!content || typeof content !== "object" || Array.isArray(content)) return valueNode(content, "", options, 0);
  const members = Object.entries(content);
  if (!members.length) return h("p", { class: "muted" }, "Empty.");
  return h("div", { class: "readable" }, members.map(([key, value]) => {
    const pointer = "/" + pointerSegment(key);
    return h("div", { class: "doc-section" },
      h(`h${level}`, {}, text(key)),
      valueNode(value, pointer, options, 1),
      isScalar(value) && options.why ? options.why(pointer) : null);
  }));
}

const DEEPEST = 5; // deeper values are shown as JSON text

function isScalar(value) {
  return value === null || typeof value !== "object";
}

function valueNode(value, pointer, options, depth) {
  if (isScalar(value) || depth > DEEPEST) return text(value);
  if (Array.isArray(value)) {
    if (!value.length) return h("p", { class: "muted" }, "No items.");
    const stale = options.freshness && options.freshness.sections.includes(pointer) ? options.freshness.rules : null;
    return h("ol", { class: "items" }, value.map((item, index) => {
      const itemPointer = `${pointer}/${index}`;
      return h("li", {}, valueNode(item, itemPointer, { ...options, inItem: true }, depth + 1),
        freshnessNote(item, stale, options.verifiedField),
        options.why && !options.inItem ? options.why(itemPointer) : null);
    }));
  }
  const members = Object.entries(value);
  if (!members.length) return h("p", { class: "muted" }, "Empty.");
  return h("dl", { class: "kv" }, members.map(([key, child]) => {
    const childPointer = `${pointer}/${pointerSegment(key)}`;
    return h("div", {},
      h("dt", {}, text(key)),
      h("dd", {}, valueNode(child, childPointer, options, depth + 1),
        isScalar(child) && !options.inItem && options.why ? options.why(childPointer) : null));
  }));
}

/** "verified <when>" of an item with a verification time, and whether it is stale. */
function freshnessNote(item, rules, verifiedField = "last_verified_at") {
  if (!item || typeof item !== "object") return null;
  const field = (rules && rules.verified_field) || verifiedField;
  const verified = item[field];
  const reason = rules ? whyStale(item, rules) : null;
  if (verified === undefined && !reason) return null;
  return h("p", { class: "freshness" },
    verified !== undefined ? ["Last verified ", typeof verified === "string" ? when(verified) : text(verified)] : null,
    reason ? h("span", { class: "stale" }, ` ${STALE[reason]}`) : null);
}

/** The freshness options of a binding: the sections whose items age, and the rules. */
export function freshnessOf(profile, binding) {
  const rules = profile.freshness_rules || null;
  const sections = rules && rules.sections ? rules.sections[binding.binding_id] || [] : [];
  return rules ? { sections, rules } : null;
}

/** The "Why?" control of one value: asks `:why` and shows who wrote it and from what. */
export function whyControl(view, doc, asOf) {
  return (pointer) => {
    const out = h("div", { class: "why", "aria-live": "polite" });
    const button = h("button", { type: "button", class: "small", "aria-expanded": "false", "aria-label": `Why ${pointer}` }, "Why?");
    button.addEventListener("click", async () => {
      if (button.getAttribute("aria-expanded") === "true") {
        button.setAttribute("aria-expanded", "false");
        fill(out);
        return;
      }
      button.setAttribute("aria-expanded", "true");
      fill(out, h("p", { class: "busy" }, "Asking why…"));
      try {
        const answer = (await getDocument(view, doc, ":why", { path: pointer, as_of: asOf })).body;
        fill(out, whyAnswer(answer));
      } catch (error) {
        fill(out, problem(error));
      }
    });
    return h("div", { class: "why-wrap" }, button, out);
  };
}

/** A `:why` answer: the changes that made the value, newest first, the origin last. */
export function whyAnswer(answer) {
  const rows = answer.changes.map((change) => h("li", { class: "why-change" },
    h("dl", { class: "kv" },
      row("Role", change.role),
      row("Written by", text(change.actor)),
      row("When", when(change.timestamp)),
      row("Reason", text(change.reason)),
      row("Confidence", change.confidence === null || change.confidence === undefined ? "—" : text(change.confidence)),
      row("Conversation", conversationOf(change.evidence)),
      row("Path then", text(change.path)),
      row("Change", h("code", {}, text(change.change_id))),
      change.evidence ? row("Evidence", json(change.evidence)) : null,
      change.origin ? row("Origin", json(change.origin)) : null,
    )));
  return h("div", { class: "why-answer" },
    h("p", {}, "Value at ", h("code", {}, text(answer.path)), ": ", text(answer.value)),
    rows.length ? h("ol", { class: "why-changes", "aria-label": `Changes that made ${answer.path}` }, rows)
      : h("p", { class: "muted" }, "No change found."),
    answer.truncated ? h("p", { class: "muted" }, `The walk stopped early (${answer.truncated_by}).`) : null);
}

function conversationOf(evidence) {
  if (!evidence || typeof evidence !== "object" || evidence.conversation_id === undefined) return "—";
  const messages = Array.isArray(evidence.message_ids) ? [" (messages ", text(evidence.message_ids.join(", ")), ")"] : [];
  return h("span", {}, text(evidence.conversation_id), messages);
}

/** One key/value row of a `<dl class="kv">`. */
export function row(label, value) {
  return h("div", {}, h("dt", {}, label), h("dd", {}, value));
}

/** A `<details>` showing a value as JSON, built only when opened (big documents). */
export function jsonDetails(label, value, open = false) {
  const details = h("details", { class: "json-view" }, h("summary", {}, label));
  if (open) {
    details.appendChild(scrollable(json(value)));
    details.open = true;
  }
  details.addEventListener("toggle", () => {
    if (details.open && details.children.length === 1) details.appendChild(scrollable(json(value)));
  });
  return details;
}

/** json()'s node with its scrolling `<pre>` reachable by keyboard (it may overflow). */
function scrollable(node) {
  const pre = node.matches("pre") ? node : node.querySelector("pre");
  pre.tabIndex = 0;
  return node;
}

/**
 * A document's facts: etag (left out when null: a past version has none of its own),
 * when and by whom it was last written, its change, and its size against the binding's
 * `max_chars` and `array_limits`.
 */
export function documentFacts(document, etag, binding) {
  const size = charCount(document);
  const limits = Object.entries((binding && binding.array_limits) || {});
  return h("dl", { class: "kv facts" },
    etag ? row("ETag", h("code", {}, text(etag))) : null,
    row("Updated", when(document.updated_at)),
    row("Updated by", text(document.updated_by)),
    row("Change", h("code", {}, text(document.change_id))),
    row("Schema", text(`${document.schema_id} ${document.schema_version}`)),
    binding && binding.max_chars ? row("Size", sizeNode(size, binding.max_chars)) : row("Size", `${size.toLocaleString()} characters`),
    limits.length ? row("Items", h("ul", { class: "limits" }, limits.map(([pointer, limit]) => {
      const value = at(document.content, pointer);
      const count = Array.isArray(value) ? value.length : 0;
      return h("li", {}, h("code", {}, pointer), ` ${count} of ${limit}`, count >= limit ? h("strong", {}, " (full)") : null);
    }))) : null,
  );
}

function sizeNode(size, limit) {
  const share = Math.round((size / limit) * 100);
  return h("span", {},
    h("meter", { min: 0, max: limit, value: Math.min(size, limit), "aria-label": "Size against the limit" }),
    ` ${size.toLocaleString()} of ${limit.toLocaleString()} characters (${share}%)`);
}
