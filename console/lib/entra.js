// Signing in with Entra ID (docs/console.md "Signing in with Entra ID"): MSAL for
// single-page apps, loaded only when the page says the app offers it (the server fills
// <meta name="memnet-entra"> from MEMNET_CONSOLE_CLIENT_ID; empty otherwise).
//
// The redirect flow with PKCE: the person leaves for Microsoft's sign-in page and comes
// back to /console/ with an authorization code in the fragment, which MSAL removes from
// the URL and exchanges for tokens. MSAL keeps them in this tab's session storage, like
// an API key; this module keeps the access token for the API's scope in memory too, so
// `credential()` can answer at once, and renews it through MSAL before each call.

import { useProvider } from "./session.js";

const MSAL = "../vendor/msal-browser.min.js"; // UMD: sets globalThis.msal
const RETURN = "memnet.console.return"; // the route to come back to after signing in

let config = null; // {clientId, authority, scope}
let app = null; // MSAL's PublicClientApplication
let token = null; // the API access token MSAL last gave

/** The sign-in settings the server put in the page, or null when Entra is off. */
export function entraConfig() {
  const meta = document.querySelector('meta[name="memnet-entra"]');
  if (!meta || !meta.content) return null;
  try {
    return JSON.parse(meta.content);
  } catch {
    return null;
  }
}

/**
 * Load MSAL and finish a sign-in that comes back from Microsoft, before the console
 * reads its route (the fragment holds MSAL's answer then). Resolves the route to go
 * on to, or null. Throws what MSAL throws for a refused or broken sign-in.
 */
export async function startEntra(settings) {
  config = settings;
  await import(MSAL);
  const { PublicClientApplication } = globalThis.msal;
  app = new PublicClientApplication({
    auth: { clientId: config.clientId, authority: config.authority, redirectUri: redirectUri() },
    cache: { cacheLocation: "sessionStorage" },
  });
  await app.initialize();
  useProvider({ current: () => token, token: renew, signOut: forget });
  let result;
  try {
    result = await app.handleRedirectPromise({ navigateToLoginRequestUrl: false });
  } catch (error) {
    await forget(); // a refused or broken sign-in leaves nothing behind
    throw error;
  }
  if (result) {
    app.setActiveAccount(result.account);
    token = result.accessToken;
    const route = sessionStorage.getItem(RETURN);
    sessionStorage.removeItem(RETURN);
    return route && route.startsWith("#") ? route : null;
  }
  const account = app.getActiveAccount() || app.getAllAccounts()[0];
  if (account) {
    app.setActiveAccount(account);
    await renew();
  }
  return null;
}

/** Leave for Microsoft's sign-in page; the console comes back to `route` (a fragment). */
export async function signInWithEntra(route) {
  sessionStorage.setItem(RETURN, route || "#/");
  await app.loginRedirect({ scopes: [config.scope] });
}

/** Where Microsoft sends the person back: the console's page (registered as a SPA
 * redirect URI of the console's app registration). */
function redirectUri() {
  return new URL("/console/", location.origin).href;
}

/** The API access token, from MSAL's cache or renewed with the refresh token; null
 * (signed out) when that cannot be done without the person (the refresh token expired,
 * consent withdrawn). Never MSAL's hidden-iframe renewal: the console's page refuses to
 * be framed (frame-ancestors 'none'), so it could only time out. */
async function renew() {
  const account = app && app.getActiveAccount();
  if (!account) return (token = null);
  try {
    const { CacheLookupPolicy } = globalThis.msal;
    const cacheLookupPolicy = CacheLookupPolicy.AccessTokenAndRefreshToken;
    const request = { account, scopes: [config.scope], cacheLookupPolicy };
    token = (await app.acquireTokenSilent(request)).accessToken;
  } catch (error) {
    if (!mustSignInAgain(error)) throw error; // say it (offline, Microsoft down), keep the account
    await forget();
  }
  return token;
}

/** Whether MSAL's failure means only the person can go on: an interaction is required,
 * or the refresh token is refused (`invalid_grant`: expired, revoked). */
function mustSignInAgain(error) {
  return error instanceof globalThis.msal.InteractionRequiredAuthError || error.errorCode === "invalid_grant";
}

/** Sign out of the console: MSAL's tokens and accounts leave this tab's storage. The
 * session at Microsoft stays (signing out there is the person's choice, elsewhere). */
async function forget() {
  token = null;
  sessionStorage.removeItem(RETURN);
  if (!app) return;
  await app.clearCache({ account: app.getActiveAccount() || undefined });
  app.setActiveAccount(null);
  // What MSAL keeps besides tokens and accounts (its cache's version): nothing of it stays.
  for (const name of Object.keys(sessionStorage)) {
    if (name.startsWith("msal.")) sessionStorage.removeItem(name);
  }
}
