// The pieces every page uses: what went wrong, what is hidden, asking before acting,
// and paging.

import { fill, h, text } from "./dom.js";

/** An error from the API, as a person reads it: what, its code, and the request id. */
export function problem(error) {
  if (error && error.hidden) return hidden(error);
  const code = error && error.code ? `${error.code}: ` : "";
  return h("div", { class: "problem", role: "alert" },
    h("strong", {}, "Not done. "), code, text(error ? error.message : "unknown error"),
    error && error.requestId ? h("span", { class: "muted" }, ` (request ${error.requestId})`) : null,
  );
}

/** What the caller's roles, tenants, profiles or clearance hide, said as such. */
export function hidden(error) {
  return h("div", { class: "hidden-note", role: "note" },
    h("strong", {}, "Hidden from you. "),
    text(error.message),
    error.code ? h("span", { class: "muted" }, ` (${error.code})`) : null,
  );
}

/** A page section: a heading and its content. */
export function section(title, ...content) {
  return h("section", { "aria-label": title }, h("h2", {}, title), ...content);
}

/**
 * Ask before acting. Resolves true when the person confirms. With `typed`, the confirm
 * button stays disabled until exactly that text is typed (forgetting is not undone).
 */
export function confirmAction({ title, message, action, typed }) {
  return new Promise((resolve) => {
    const input = typed
      ? h("input", { type: "text", autocomplete: "off", spellcheck: "false", "aria-label": `Type ${typed} to confirm` })
      : null;
    const yes = h("button", { type: "button", class: "danger", disabled: Boolean(typed) }, action);
    const no = h("button", { type: "button" }, "Cancel");
    const dialog = h("dialog", { "aria-label": title, class: "confirm" },
      h("h2", {}, title),
      h("p", {}, message),
      typed ? h("label", {}, "Type ", h("code", {}, h("bdi", {}, typed)), " to confirm: ", input) : null,
      h("div", { class: "actions" }, yes, no),
    );
    const close = (answer) => { dialog.close(); dialog.remove(); resolve(answer); };
    if (input) input.addEventListener("input", () => { yes.disabled = input.value !== typed; });
    yes.addEventListener("click", () => close(true));
    no.addEventListener("click", () => close(false));
    dialog.addEventListener("cancel", () => close(false));
    document.body.appendChild(dialog);
    dialog.showModal();
    (input || no).focus();
  });
}

/**
 * A list that loads page after page: `load(cursor)` answers `{items, next}`;
 * `row(item)` makes an item's node. "Load more" appends the next page.
 */
export function pager({ load, row, empty = "Nothing here.", label = "Results" }) {
  const list = h("ol", { class: "pager-list", "aria-label": label });
  const status = h("p", { class: "muted", role: "status" });
  const more = h("button", { type: "button", hidden: true }, "Load more");
  let cursor = null;
  let count = 0;
  const next = async () => {
    more.disabled = true;
    fill(status, "Loading…");
    try {
      const page = await load(cursor);
      const fragment = document.createDocumentFragment();
      for (const item of page.items) fragment.appendChild(h("li", {}, row(item)));
      list.appendChild(fragment);
      count += page.items.length;
      cursor = page.next;
      more.hidden = !cursor;
      fill(status, count ? `${count.toLocaleString()} shown${cursor ? "" : ", all"}` : empty);
    } catch (error) {
      fill(status, problem(error));
    } finally {
      more.disabled = false;
    }
  };
  more.addEventListener("click", next);
  next();
  return h("div", { class: "pager" }, list, status, more);
}

/** A form's named fields as an object of strings (empty ones left out). */
export function fields(form) {
  const values = {};
  for (const [name, value] of new FormData(form).entries()) {
    if (typeof value === "string" && value.trim() !== "") values[name] = value.trim();
  }
  return values;
}
