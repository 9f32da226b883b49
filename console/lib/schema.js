// Checking a value against a binding's JSON Schema in the browser, before it is sent
// (docs/console.md "Review"). The server checks again, always: this only spares a person
// a refused request and shows what is wrong next to what they typed.
//
// The page's policy forbids eval, so a compiling validator cannot run here; the vendored
// @cfworker/json-schema interprets the schema instead (console/vendor/json-schema.js).

import { dereference, validate } from "../vendor/json-schema.js";

const DRAFT = "2020-12"; // the profiles' schemas say so ($schema)

/**
 * A binding's content schema ready to check values against: `root` as the profile answers
 * it (`GET /v1/profiles/{id}` → `schemas[schema_id][version]`), its `$ref`s resolved once.
 * The object is annotated in place, so give it a schema of its own (a fresh answer).
 */
export function prepared(root) {
  return { root, lookup: dereference(root) };
}

/**
 * The subschema a value written at `pointer` (a content path such as `/durable_facts/-`,
 * as a proposal's `target_path` names it) must match, or null when it cannot be told
 * without guessing (a path through `anyOf`/`oneOf`, or a `$ref` outside the schema).
 */
export function subschemaAt(schema, pointer) {
  let at = follow(schema.root, schema.root);
  for (const segment of segments(pointer)) {
    if (at === null || at === true || at === undefined) return at === undefined ? null : true;
    if (at === false) return false;
    if (at.anyOf || at.oneOf || at.allOf) return null;
    at = follow(schema.root, step(at, segment));
  }
  return at === undefined ? null : at;
}

/** One level down: an array's items, an object's member by name, pattern or default. */
function step(at, segment) {
  const types = [].concat(at.type || []);
  const isArray = types.includes("array") || (!types.length && (at.items !== undefined || at.prefixItems));
  if (isArray) {
    const index = /^\d+$/.test(segment) ? Number(segment) : -1;
    if (at.prefixItems && index >= 0 && index < at.prefixItems.length) return at.prefixItems[index];
    return at.items === undefined ? true : at.items;
  }
  if (at.properties && Object.hasOwn(at.properties, segment)) return at.properties[segment];
  for (const [pattern, sub] of Object.entries(at.patternProperties || {})) {
    if (new RegExp(pattern, "u").test(segment)) return sub;
  }
  return at.additionalProperties === undefined ? true : at.additionalProperties;
}

/** A schema with its local `$ref` followed (`#/$defs/x`); undefined for any other `$ref`. */
function follow(root, at) {
  let seen = 0;
  while (at && typeof at === "object" && typeof at.$ref === "string") {
    if (!at.$ref.startsWith("#") || ++seen > 32) return undefined;
    const keys = Object.keys(at).filter((k) => !k.startsWith("$") && k !== "description" && k !== "title" && !k.startsWith("__"));
    if (keys.length) return null; // a $ref beside other keywords: not walked here
    at = segments(decodeURIComponent(at.$ref.slice(1))).reduce((node, key) => (node ? node[key] : undefined), root);
  }
  return at;
}

/** A JSON Pointer's reference tokens, unescaped. */
function segments(pointer) {
  if (!pointer) return [];
  return pointer.split("/").slice(1).map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
}

/**
 * What is wrong with `value` against `subschema` (of `schema`): `[{at, message}]`, empty
 * when it is valid. `at` is a JSON Pointer into the value ("" for the value itself).
 * Only the innermost errors are kept ("a subschema had errors" says nothing more).
 */
export function problems(schema, subschema, value) {
  const result = validate(value, subschema, DRAFT, schema.lookup, false);
  if (result.valid) return [];
  // "False boolean schema" only repeats the additionalProperties error beside it
  const errors = result.errors.filter((e) => e.keyword !== "false" || result.errors.length === 1);
  const innermost = errors.filter((e) => !errors.some((other) =>
    other !== e && other.keywordLocation.startsWith(e.keywordLocation + "/")));
  const seen = new Set();
  const found = [];
  for (const error of innermost) {
    const at = error.instanceLocation.replace(/^#/, "");
    const key = `${at}\0${error.error}`;
    if (seen.has(key)) continue;
    seen.add(key);
    found.push({ at, message: error.error });
  }
  return found;
}
