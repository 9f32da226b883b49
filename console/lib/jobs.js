// Following a job the API runs in the background (a forget, an export): ask for its
// status again and again, show each answer, stop when it ends.

import { fill } from "./dom.js";

/** How often a job is asked about: first quickly, then less often, at most every 5 s. */
export const FIRST_POLL_MS = 400;
export const LONGEST_POLL_MS = 5000;

/**
 * Follow a job: `load()` answers its status; `show(status)` renders each one into
 * `into`; `ended(status)` says when to stop. Stops too on an error (shown with
 * `fail(error)`) and once `into` has left the page (the person went elsewhere).
 * Resolves with the last status (null after an error or leaving).
 */
export async function follow({ load, show, ended, fail, into }) {
  let wait = FIRST_POLL_MS;
  let attached = false;
  const gone = () => {
    attached ||= into.isConnected;
    return attached && !into.isConnected;
  };
  for (;;) {
    let status;
    try {
      status = await load();
    } catch (error) {
      fill(into, fail(error));
      return null;
    }
    fill(into, show(status));
    if (ended(status)) return status;
    await new Promise((resolve) => setTimeout(resolve, wait));
    if (gone()) return null;
    wait = Math.min(Math.round(wait * 1.5), LONGEST_POLL_MS);
  }
}
