// Following a job the API runs in the background (a forget, an export): ask for its
// status again and again, show each answer, stop when it ends.

import { fill } from "./dom.js";

/** How often a job is asked about: first quickly, then less often, at most every 5 s. */
export const FIRST_POLL_MS = 400;
export const LONGEST_POLL_MS = 5000;

/**
 * Follow a job: `load()` answers its status; `show(status)` renders each one into
 * `into`; `ended(status)` says when to stop. Stops too on an error (shown with
 * `fail(error)`), once `into` has left the page, and once `live()` (the page's
 * `view.live`) says another screen replaced the one that started it.
 * Resolves with the last status (null after an error or leaving).
 */
export async function follow({ load, show, ended, fail, into, live = () => true }) {
  let wait = FIRST_POLL_MS;
  let attached = false;
  let last = null;
  const gone = () => {
    attached ||= into.isConnected;
    return !live() || (attached && !into.isConnected);
  };
  for (;;) {
    let status;
    try {
      status = await load();
    } catch (error) {
      fill(into, fail(error));
      return null;
    }
    if (!live()) return null;
    const seen = JSON.stringify(status);
    if (seen !== last) fill(into, show(status)); // unchanged: a live region is not re-announced
    last = seen;
    if (ended(status)) return status;
    await new Promise((resolve) => setTimeout(resolve, wait));
    if (gone()) return null;
    wait = Math.min(Math.round(wait * 1.5), LONGEST_POLL_MS);
  }
}
