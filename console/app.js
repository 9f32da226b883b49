// The console's shell: signing in, choosing whose memory to look at, and the pages
// (docs/console.md). Routes live in the URL's fragment, `#/<tenant>/<user>/<page>?…`,
// so a link names what it shows but never carries a credential.

import { ApiError, call } from "./lib/api.js";
import { fill, h } from "./lib/dom.js";
import { entraConfig, signInWithEntra, startEntra } from "./lib/entra.js";
import { credential, signIn, signOut } from "./lib/session.js";
import { problem } from "./lib/ui.js";
import { PAGES } from "./pages/index.js";

const main = document.getElementById("main");
const nav = document.getElementById("nav");
const who = document.getElementById("who");
const entra = entraConfig(); // Entra ID sign-in, when the app offers it (lib/entra.js)
let me = null; // GET /v1/me of the signed-in caller
let refused = null; // why the last Entra sign-in failed, shown until the next attempt
let generation = 0; // the screen shown now: a page still loading for an older one is dropped

/** An id as the server takes it (memnet/domain/identifiers.py): never "." or "..", which
 * a browser would resolve away inside an API path. */
const ID_PATTERN = "[A-Za-z0-9][A-Za-z0-9._\\-]{0,127}"; // as an input's pattern, too
const ID = new RegExp(`^${ID_PATTERN}$`);

/** `#/t/u/page?x=1` as {tenant, user, page, params}. */
export function parseRoute(hash = location.hash) {
  const [route, search = ""] = hash.replace(/^#\/?/, "").split("?");
  let parts = null;
  try {
    parts = route.split("/").map((part) => decodeURIComponent(part || ""));
  } catch {
    parts = null; // a malformed escape
  }
  const [tenant, user, page] = parts || ["", "", ""];
  const valid = parts !== null && (!tenant || ID.test(tenant)) && (!user || ID.test(user));
  return { tenant: valid ? tenant : "", user: valid ? user : "", page: page || "memory",
    params: new URLSearchParams(search), refused: !valid };
}

/** The fragment for a page of a user's memory. */
export function routeOf(tenant, user, page, params = {}) {
  const kept = Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== "");
  const search = kept.length ? "?" + new URLSearchParams(kept).toString() : "";
  return `#/${encodeURIComponent(tenant)}/${encodeURIComponent(user)}/${page}${search}`;
}

async function show() {
  generation += 1;
  if (!credential()) return showSignIn();
  if (!me) {
    try {
      me = (await call("GET", "/v1/me")).body;
    } catch (error) {
      // Refused (401), or valid but granted nothing here (403: an Entra account whose
      // application or roles mem.net does not accept): signed out, saying why.
      if (error instanceof ApiError && (error.status === 401 || error.status === 403)) {
        await signOut();
        return showSignIn(error);
      }
      return fill(main, problem(error));
    }
  }
  fill(who, h("span", {}, "Signed in as ", h("bdi", {}, me.caller_id), ` (${me.roles.join(", ") || "no roles"})`),
    " ", h("button", { type: "button", onclick: leave }, "Sign out"));
  const route = parseRoute();
  if (!route.tenant || !route.user) return showChooser(route);
  return showPage(route);
}

async function leave() {
  generation += 1;
  await signOut();
  me = null;
  location.hash = "#/";
  show();
}

function showSignIn(error = refused) {
  delete main.dataset.ready;
  fill(who);
  fill(nav);
  const key = h("input", { type: "password", name: "key", id: "api-key", autocomplete: "off", required: true });
  const form = h("form", { class: "card", "aria-label": "Sign in" },
    h("h1", {}, "Sign in"),
    h("p", {}, "Use a mem.net API key. It stays in this tab only and is sent to this server alone."),
    h("label", { for: "api-key" }, "API key"), key,
    h("button", { type: "submit" }, "Sign in"),
    error ? problem(error) : null,
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    refused = null;
    signIn(key.value.trim());
    me = null;
    show();
  });
  fill(main, form, entra ? entraSignIn() : null);
  key.focus();
}

/** The other way in, when the app offers it: the person's organisation account. */
function entraSignIn() {
  const button = h("button", { type: "button" }, "Sign in with Microsoft");
  button.addEventListener("click", async () => {
    button.disabled = true;
    refused = null;
    try {
      await signInWithEntra(location.hash);
    } catch (error) {
      button.disabled = false;
      button.after(problem(error));
    }
  });
  return h("section", { class: "card", "aria-label": "Sign in with Entra ID" },
    h("h2", {}, "Or with your organisation account"),
    h("p", {}, "Entra ID: you sign in at Microsoft and come back here. The token stays in this tab only."),
    button);
}

function showChooser(route) {
  delete main.dataset.ready;
  fill(nav);
  const tenants = me.tenants.filter((t) => t !== "*");
  const tenant = me.tenants.includes("*") || tenants.length !== 1
    ? h("input", { id: "tenant", name: "tenant", required: true, value: route.tenant || tenants[0] || "", autocomplete: "off" })
    : h("input", { id: "tenant", name: "tenant", required: true, value: tenants[0], readonly: true });
  const user = h("input", { id: "user", name: "user", required: true, value: me.user_id || "", autocomplete: "off", pattern: ID_PATTERN });
  tenant.setAttribute("pattern", ID_PATTERN);
  const form = h("form", { class: "card", "aria-label": "Choose a user" },
    h("h1", {}, "Whose memory?"),
    route.refused ? h("p", { class: "problem", role: "alert" }, "That link names no valid tenant and user: ids are letters, digits, '.', '_' and '-', starting with a letter or digit.") : null,
    h("label", { for: "tenant" }, "Tenant"), tenant,
    h("label", { for: "user" }, "User"), user,
    h("button", { type: "submit" }, "Open"),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    location.hash = routeOf(tenant.value.trim(), user.value.trim(), "memory");
  });
  fill(main, form);
}

async function showPage(route) {
  const page = PAGES.find((p) => p.id === route.page) || PAGES[0];
  const profile = route.params.get("profile") || me.profiles[0] || null;
  fill(nav, h("ul", {}, PAGES.map((p) => h("li", {},
    h("a", { href: routeOf(route.tenant, route.user, p.id, { profile }), "aria-current": p === page ? "page" : null }, p.title)))),
  h("p", { class: "muted" }, "User ", h("bdi", {}, route.user), " of tenant ", h("bdi", {}, route.tenant), " · ",
    h("a", { href: "#/" }, "change")));
  const mine = generation;
  const view = {
    me,
    tenant: route.tenant,
    user: route.user,
    profile,
    params: route.params,
    go: (pageId, params = {}) => { location.hash = routeOf(route.tenant, route.user, pageId, { profile, ...params }); },
    refresh: () => show(),
    live: () => mine === generation, // false once another screen replaced this one
  };
  delete main.dataset.ready;
  fill(main, h("p", { class: "busy", role: "status" }, "Loading…"));
  document.title = `${page.title} · mem.net console`;
  let shown;
  try {
    shown = await page.render(view);
  } catch (error) {
    shown = problem(error);
  }
  if (mine !== generation) return; // another route, or signed out, while this loaded
  fill(main, h("h1", {}, page.title), shown);
  main.dataset.ready = route.page;
  main.focus({ preventScroll: true });
}

/** Finish an Entra sign-in coming back from Microsoft (its answer is in the fragment
 * until MSAL takes it), then show the route. */
async function start() {
  if (entra) {
    try {
      const route = await startEntra(entra);
      if (route) history.replaceState(null, "", route);
    } catch (error) {
      refused = error;
    }
  }
  window.addEventListener("hashchange", show);
  return show();
}

start();
