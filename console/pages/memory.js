// Memory (docs/console.md "Memory"): what mem.net holds about a user, binding by
// binding of the profile. A fixed-path binding's document is read directly; a templated
// one's documents (one per project, say) come from the namespace listing, page by page.
// Each document is shown readably, as JSON, with its size against the binding's limits,
// its freshness, and a "Why?" on each value.

import { call, path, query } from "../lib/api.js";
import { h, text } from "../lib/dom.js";
import {
  bindingPlace, bindingsOf, documentFacts, freshnessOf, getDocument, jsonDetails, listingPath,
  readable, whyControl,
} from "../lib/documents.js";
import { hidden, pager, problem, section } from "../lib/ui.js";

export const id = "memory";
export const title = "Memory";

const LISTING_PAGE = 10; // documents of a templated binding read per "Load more"

/** The profile as the API answers it (`GET /v1/profiles/{id}`): `{profile_id, profile, schemas}`. */
export async function loadProfile(view) {
  if (!view.profile) throw new Error("You may use no profile, so no memory can be read.");
  return (await call("GET", path("v1", "profiles", view.profile))).body.profile;
}

export async function render(view) {
  const profile = await loadProfile(view);
  const bindings = bindingsOf(profile);
  return h("div", { class: "memory" },
    h("p", {}, "Profile ", h("code", {}, text(view.profile)), ": ", text(profile.description || "")),
    bindings.map((binding) => bindingSection(view, profile, binding)));
}

/** One binding: its limits, then its document (fixed path) or documents (template). */
function bindingSection(view, profile, binding) {
  const body = h("div", { class: "binding-body" }, h("p", { class: "busy" }, "Loading…"));
  const fill = (...nodes) => body.replaceChildren(...nodes.filter(Boolean));
  if (binding.path) {
    const doc = `${binding.namespace}/${binding.path}`;
    getDocument(view, doc).then(
      (answer) => fill(documentView(view, profile, binding, doc, answer)),
      (error) => fill(missing(error, binding)),
    );
  } else {
    fill(templated(view, profile, binding));
  }
  return section(binding.binding_id,
    h("p", { class: "muted" }, h("code", {}, text(bindingPlace(binding))),
      ` · schema ${binding.schema_id} ${binding.schema_version}`,
      ` · at most ${Number(binding.max_chars).toLocaleString()} characters`,
      binding.scope === "tenant" ? " · shared by every user of the tenant" : null),
    body);
}

/** What a failed read of a binding's document says: none yet, hidden, or the problem. */
function missing(error, binding) {
  if (error.code === "DOCUMENT_NOT_FOUND") return h("p", { class: "muted" }, "None yet: nothing has been written to this document.");
  if (error.hidden) {
    return hidden({ ...error, message: `The ${binding.binding_id} documents are hidden from you: ${error.message}`, code: error.code });
  }
  return problem(error);
}

/** A templated binding's documents: the namespace listing, a few documents at a time. */
function templated(view, profile, binding) {
  return pager({
    label: `${binding.binding_id} documents`,
    empty: "None yet: no document of this binding has been written.",
    load: async (cursor) => {
      const page = (await call("GET", listingPath(view, binding.namespace)
        + query({ limit: LISTING_PAGE, continuation: cursor, profile_id: view.profile }))).body;
      const mine = page.documents.filter((d) => d.binding_id === binding.binding_id);
      const items = await Promise.all(mine.map(async (listed) => {
        const doc = `${binding.namespace}/${listed.path}`;
        try {
          return documentView(view, profile, binding, doc, await getDocument(view, doc));
        } catch (error) {
          return h("div", {}, h("h3", {}, text(listed.path)), missing(error, binding));
        }
      }));
      return { items, next: page.continuation };
    },
    row: (node) => node,
  });
}

/** One document: heading, facts (etag, size…), the content readably, and as JSON. */
export function documentView(view, profile, binding, doc, answer) {
  const { document } = answer.body;
  const etag = answer.etag || answer.body.etag;
  return h("article", { class: "document", "aria-label": doc },
    h("h3", {}, text(doc.slice(binding.namespace.length + 1))),
    documentFacts(document, etag, binding),
    h("div", { class: "actions" },
      h("button", { type: "button", onclick: () => view.go("history", { doc }) }, "Show its history")),
    readable(document.content, {
      why: whyControl(view, doc),
      freshness: freshnessOf(profile, binding),
    }),
    jsonDetails("As JSON", document));
}
