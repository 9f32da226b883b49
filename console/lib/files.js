// Saving a file the API answers (an export's archive, docs/console.md "Governance").
//
// A download needs the caller's credential, which lives in this tab only, so the browser
// cannot be sent to the file's URL: the console fetches the bytes with the Authorization
// header, keeps them as a Blob, and saves them through an `<a download>` it makes itself
// on an object URL of that Blob (dom.js ownObjectUrl, the one non-route `href`).

import { ApiError } from "./api.js";
import { h, ownObjectUrl, revokeObjectUrl } from "./dom.js";
import { bearer } from "./session.js";

/** The body of a GET as a Blob (its Content-Type kept), or an ApiError. */
export async function fetchFile(target) {
  const headers = { Accept: "*/*" };
  const secret = await bearer(); // renewed first, as lib/api.js does
  if (secret) headers.Authorization = `Bearer ${secret}`;
  const response = await fetch(target, { headers, cache: "no-store", credentials: "omit" });
  if (!response.ok) {
    let body = null;
    try {
      body = JSON.parse(await response.text());
    } catch {
      body = null;
    }
    throw new ApiError(response.status, body, response.headers.get("x-request-id"));
  }
  return response.blob();
}

/**
 * Hand a Blob to the browser as a saved file named `name` (the browser cleans the name).
 * The link lives for one click; its object URL is let go a minute later.
 */
export function saveFile(blob, name) {
  const url = ownObjectUrl(blob);
  const link = h("a", { href: url, download: name, hidden: true }, name);
  document.body.appendChild(link);
  link.click();
  link.remove();
  setTimeout(() => revokeObjectUrl(url), 60_000);
}
