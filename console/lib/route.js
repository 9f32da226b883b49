// The current route's parameters, changed in place: a page records what it is showing
// (an export's id, a conversation) so that a reload or a shared link shows it again,
// without navigating (which would render the page anew).

/** Set (or, with null/undefined/"", remove) parameters of the current `#/…?…` route. */
export function replaceParams(changes) {
  const [route, search = ""] = location.hash.split("?");
  const params = new URLSearchParams(search);
  for (const [name, value] of Object.entries(changes)) {
    if (value === undefined || value === null || value === "") params.delete(name);
    else params.set(name, value);
  }
  const kept = params.toString();
  history.replaceState(history.state, "", kept ? `${route}?${kept}` : route);
}
