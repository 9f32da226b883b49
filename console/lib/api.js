// The public API, as the Python client calls it (docs/api.md). The console has no route
// of its own: every call here is one a client could make with the same credential.

import { bearer } from "./session.js";

/** An answer that is not 2xx, in the spec's error shape (`code`, `message`, `details`). */
export class ApiError extends Error {
  constructor(status, body, requestId) {
    const error = (body && body.error) || {};
    super(error.message || `HTTP ${status}`);
    this.status = status;
    this.code = error.code || `HTTP_${status}`;
    this.details = error.details || {};
    this.requestId = requestId;
  }

  /** Whether the caller's roles, tenants, profiles or clearance hid this. */
  get hidden() {
    return this.status === 403;
  }
}

/** A path from segments, each percent-encoded (ids may hold any character). */
export function path(...segments) {
  return "/" + segments.map(segment).join("/");
}

/** One path segment, percent-encoded. "", "." and ".." are refused: encoding cannot hide
 * them (a browser resolves "%2E%2E" as ".." too), and `users/../hold` would reach the
 * tenant's hold instead of a user's. */
function segment(value) {
  const text = String(value);
  if (text === "" || text === "." || text === "..") {
    throw new ApiError(400, { error: { code: "INVALID_IDENTIFIER", message: `Not an id: "${text}".` } }, null);
  }
  return encodeURIComponent(text);
}

/** `?a=1&b=2` of the members that are set. */
export function query(params) {
  const kept = Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== "");
  return kept.length ? "?" + new URLSearchParams(kept).toString() : "";
}

/**
 * One call: `{status, etag, body}` for 2xx, an ApiError otherwise.
 * `options`: `body` (sent as JSON), `headers`, `raw` (answer the body as text).
 */
export async function call(method, target, options = {}) {
  const headers = { Accept: "application/json", ...(options.headers || {}) };
  const secret = await bearer();
  if (secret) headers.Authorization = `Bearer ${secret}`;
  let body;
  if (options.body !== undefined) {
    headers["Content-Type"] = "application/json";
    body = JSON.stringify(options.body);
  }
  const response = await fetch(target, { method, headers, body, cache: "no-store", credentials: "omit" });
  const textBody = await response.text();
  const parsed = options.raw ? textBody : parse(textBody);
  if (!response.ok) {
    throw new ApiError(response.status, options.raw ? parse(textBody) : parsed, response.headers.get("x-request-id"));
  }
  return { status: response.status, etag: response.headers.get("ETag"), body: parsed };
}

function parse(textBody) {
  if (!textBody) return null;
  try {
    return JSON.parse(textBody);
  } catch {
    return null;
  }
}

/** A fresh Idempotency-Key for one user action (its retries reuse it). */
export function idempotencyKey() {
  return crypto.randomUUID();
}
