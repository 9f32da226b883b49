// Building the page without markup strings (docs/console.md "Untrusted content").
//
// Everything the console shows from memory is untrusted text: it may come from a
// prompt-injected conversation. So no string ever becomes HTML: elements are made with
// createElement, text with text nodes, attributes from a short list of names, and event
// handlers as functions. The page's Content Security Policy requires Trusted Types, so
// an innerHTML assignment anywhere would throw instead of running.

const ATTRIBUTES = new Set([
  "class", "id", "for", "type", "name", "value", "placeholder", "role", "title", "lang",
  "autocomplete", "min", "max", "step", "rows", "cols", "colspan", "scope", "tabindex",
  "required", "disabled", "checked", "selected", "readonly", "multiple", "open",
  "spellcheck", "inputmode", "pattern", "maxlength", "size", "dir", "hidden", "method",
  "download",
]);

/**
 * Object URLs the console made itself (`ownObjectUrl`) for bytes it fetched from the API
 * with the caller's credential, so that a person can save them (an export's files). They
 * are the one exception to "no `href` but the console's own routes": a `blob:` URL is a
 * local copy of bytes, never text from memory, and h() accepts one only if it is in this
 * set, i.e. was made by URL.createObjectURL here. A `blob:` string from content is not.
 */
const OWN_OBJECT_URLS = new Set();

/** An object URL for a Blob the console holds, which h() accepts as an `href`. */
export function ownObjectUrl(blob) {
  const url = URL.createObjectURL(blob);
  OWN_OBJECT_URLS.add(url);
  return url;
}

/** Let an object URL of ownObjectUrl go (the browser frees the bytes). */
export function revokeObjectUrl(url) {
  OWN_OBJECT_URLS.delete(url);
  URL.revokeObjectURL(url);
}

/** The longest run of a value's text shown before "show all" (a 1 MB string stays usable). */
export const CLIP = 2000;

/**
 * An element: `h("button", {class: "x", onclick: fn}, "Save")`. Children are nodes,
 * strings (as text), numbers, arrays of those, or null/undefined/false (skipped).
 * Attribute names outside a fixed list are refused, as are `src`, `style` and any `href`
 * but the console's own `#/` routes and object URLs it made itself (ownObjectUrl): no
 * content can become a link or load anything.
 */
export function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      element.addEventListener(name.slice(2), value);
    } else if (name === "href" && String(value).startsWith("#/")) {
      element.setAttribute("href", value); // the console's own routes only, never data
    } else if (name === "href" && OWN_OBJECT_URLS.has(value)) {
      element.setAttribute("href", value); // a download the console fetched (ownObjectUrl)
    } else if (name === "dataset") {
      Object.assign(element.dataset, value);
    } else if (ATTRIBUTES.has(name) || name.startsWith("aria-") || name.startsWith("data-")) {
      element.setAttribute(name, value === true ? "" : String(value));
    } else {
      throw new Error(`attribute not allowed: ${name}`);
    }
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(element, child);
    else if (child instanceof Node) element.appendChild(child);
    else element.appendChild(document.createTextNode(String(child)));
  }
}

/** Replace an element's children. */
export function fill(element, ...children) {
  element.replaceChildren();
  append(element, children);
  return element;
}

/**
 * Untrusted text, isolated from its surroundings: a `<bdi>` keeps right-to-left overrides
 * and marks inside it, and a value longer than CLIP shows its start with a button that
 * shows the rest (as text, like the start).
 */
export function text(value, className = "value") {
  const full = typeof value === "string" ? value : JSON.stringify(value);
  if (full === undefined) return h("bdi", { class: className }, "—");
  if (full.length <= CLIP) return h("bdi", { class: className }, breakable(full));
  const shown = h("bdi", { class: className }, breakable(full.slice(0, CLIP)));
  const more = h("button", {
    type: "button",
    class: "link",
    onclick: () => { fill(shown, breakable(full)); more.remove(); },
  }, `show all ${full.length.toLocaleString()} characters`);
  return h("span", {}, shown, "… ", more);
}

/** The longest run of text laid out without a break opportunity (see breakable). */
const RUN = 200;

/**
 * A value as text nodes of at most RUN characters with a `<wbr>` between them. A browser
 * lays out one unbroken word in time that grows faster than its length (a 200,000
 * character run without a space took 10 s in Chromium, 1 MB over a minute): a hostile
 * value must not freeze the page. The text itself is unchanged (copying it gives the
 * value back); a surrogate pair is never split.
 */
export function breakable(value) {
  if (value.length <= RUN) return [value];
  const parts = [];
  for (let start = 0; start < value.length;) {
    let end = Math.min(start + RUN, value.length);
    const last = value.charCodeAt(end - 1);
    if (end < value.length && last >= 0xd800 && last <= 0xdbff) end += 1;
    parts.push(value.slice(start, end));
    if (end < value.length) parts.push(document.createElement("wbr"));
    start = end;
  }
  return parts;
}

/** A JSON value as indented text (each string isolated as untrusted text). */
export function json(value) {
  const full = JSON.stringify(value, null, 2) ?? "null";
  if (full.length <= CLIP * 10) return h("pre", { class: "json" }, h("bdi", {}, full));
  const pre = h("pre", { class: "json" }, h("bdi", {}, full.slice(0, CLIP * 10)));
  const more = h("button", {
    type: "button",
    class: "link",
    onclick: () => { fill(pre, h("bdi", {}, full)); more.remove(); },
  }, `show all ${full.length.toLocaleString()} characters`);
  return h("div", {}, pre, more);
}

/** A table: `columns` are [heading, (row) => cell]. */
export function table(caption, columns, rows) {
  return h("table", {},
    h("caption", {}, caption),
    h("thead", {}, h("tr", {}, columns.map(([heading]) => h("th", { scope: "col" }, heading)))),
    h("tbody", {}, rows.map((row) => h("tr", {}, columns.map(([, cell]) => h("td", {}, cell(row)))))),
  );
}

/** A time as the reader's local time, with the stored instant as its title. */
export function when(instant) {
  if (!instant) return h("span", {}, "—");
  const date = new Date(instant);
  const shown = Number.isNaN(date.getTime()) ? String(instant) : date.toLocaleString();
  return h("time", { title: String(instant) }, shown);
}
