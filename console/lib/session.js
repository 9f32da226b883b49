// Who is signed in (docs/console.md "Signing in"). The API key lives in this tab's
// session storage only: never in a URL, a cookie or local storage, and gone when the tab
// closes. An Entra ID sign-in keeps its token the same way.

const KEY = "memnet.console.credential";

/** The bearer credential of this tab, or null. */
export function credential() {
  return sessionStorage.getItem(KEY);
}

export function signIn(secret) {
  sessionStorage.setItem(KEY, secret);
}

export function signOut() {
  sessionStorage.removeItem(KEY);
}
