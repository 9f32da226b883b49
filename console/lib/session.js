// Who is signed in (docs/console.md "Signing in"). The API key lives in this tab's
// session storage only: never in a URL, a cookie or local storage, and gone when the tab
// closes. An Entra ID sign-in keeps its tokens the same way (MSAL's cache, in session
// storage: lib/entra.js, which registers itself here as the provider).

const KEY = "memnet.console.credential";

/** The other way to sign in than a key, when the app offers it: `{current(): string|null,
 * token(): Promise<string|null>, signOut(): Promise}` (lib/entra.js). */
let provider = null;

export function useProvider(other) {
  provider = other;
}

/** The bearer credential of this tab as it is now (the API key, or the last access
 * token), or null. */
export function credential() {
  return sessionStorage.getItem(KEY) || (provider && provider.current()) || null;
}

/** The credential to send now: the API key, or an access token renewed when it is about
 * to expire; null when signed out. */
export async function bearer() {
  const key = sessionStorage.getItem(KEY);
  if (key || !provider) return key;
  return provider.token();
}

export function signIn(secret) {
  sessionStorage.setItem(KEY, secret);
}

/** Forget the key and any Entra sign-in of this tab. */
export async function signOut() {
  sessionStorage.removeItem(KEY);
  if (provider) await provider.signOut();
}
