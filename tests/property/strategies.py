"""Hostile inputs: text, JSON (as values and as raw bytes), JSON Patch ops and pointers,
document contents, identifiers, timestamps and headers.

Generators lean towards what breaks services rather than uniform noise: invisible and
bidirectional characters, NUL, full-width letters, lone surrogates (only expressible as
``\\uD800`` escapes), duplicate member names, ``NaN``/``1e400`` tokens, deep nesting,
pointers with bad escapes or into the envelope, other spellings of denylisted names.
Raw JSON is a small tree (:class:`Members`, :class:`Token`) so that a body can hold
what ``json.dumps`` cannot write; :func:`verdict` says whether such a body is strict
JSON the service can store faithfully ("valid"), must refuse ("malformed"), or may do
either ("either", e.g. ``1e-400`` silently underflowing).
"""

from __future__ import annotations

import codecs
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any
from urllib.parse import quote, unquote

from hypothesis import settings
from hypothesis import strategies as st

from tests.property.harness import Target


def budget(share: float) -> int:
    """A share of the loaded profile's ``max_examples``, for tests whose examples cost
    more (megabyte bodies, real HTTP)."""
    return max(5, int(settings().max_examples * share))


ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff\u00ad"
BIDI = "\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
CONTROL = "\x00\x01\x08\t\n\r\x0b\x1b\x1f\x7f\x85"
ODD = "\u2028\u2029\ufffd\U0010ffff\U0001f600\u0301\u0130\u00df\u212a\ufb01"
FULL_WIDTH = "\uff21\uff3a\uff41\uff5a\uff10\uff19\uff33\uff53"  # full-width A Z a z 0 9 S s
SYNTAX = '/~01-."\\*?#%{}[]: '
TRICKY = ZERO_WIDTH + BIDI + CONTROL + ODD + FULL_WIDTH + SYNTAX


def mostly(usual: st.SearchStrategy[Any], odd: st.SearchStrategy[Any], odds: int = 9) -> Any:
    """``usual`` about ``odds`` times in ``odds + 1`` (and what failures shrink towards),
    else ``odd``: sequences of writes need most requests to be accepted to get anywhere.
    (Not ``one_of(usual, usual, ..., odd)``: one_of drops repeated branches.)"""
    return st.integers(0, odds).flatmap(lambda i: odd if i == odds else usual)


@cache
def texts(min_size: int = 0, max_size: int = 30) -> st.SearchStrategy[str]:
    """Strings that JSON can carry (no lone surrogates), rich in tricky characters."""
    alphabet = st.one_of(st.sampled_from(TRICKY), st.characters(codec="utf-8"))
    return st.text(alphabet, min_size=min_size, max_size=max_size)


@cache
def with_lone_surrogate() -> st.SearchStrategy[str]:
    surrogate = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
    return st.builds(lambda a, s, b: a + s + b, texts(max_size=5), surrogate, texts(max_size=5))


@cache
def scalars() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.sampled_from([0, -1, 2**53 + 1, 2**63, -(2**63) - 1, 10**30]),
        st.floats(allow_nan=False, allow_infinity=False),
        st.sampled_from([-0.0, 5e-324, 1.7976931348623157e308, 0.1]),
        texts(),
    )


@cache
def json_values(max_leaves: int = 10) -> st.SearchStrategy[Any]:
    """JSON values (as Python data) that the service can store."""
    return st.recursive(
        scalars(),
        lambda inner: st.one_of(
            st.lists(inner, max_size=4), st.dictionaries(texts(max_size=12), inner, max_size=4)
        ),
        max_leaves=max_leaves,
    )


def nest(depth: int, leaf: Any = "leaf", key: str = "a") -> Any:
    """``leaf`` wrapped in ``depth`` objects ``{key: ...}``."""
    value = leaf
    for _ in range(depth):
        value = {key: value}
    return value


# -- raw JSON -------------------------------------------------------------------------


@dataclass(frozen=True)
class Token:
    """A JSON token written verbatim."""

    text: str
    verdict: str  # valid | malformed | either


@dataclass(frozen=True)
class Members:
    """An object as its member list, so that names may repeat."""

    pairs: tuple[tuple[str, Any], ...]


TOKENS = (
    Token("NaN", "malformed"),
    Token("Infinity", "malformed"),
    Token("-Infinity", "malformed"),
    Token("1e400", "malformed"),
    Token("-1E+400", "malformed"),
    Token("1.8e308", "malformed"),
    Token("-0", "valid"),
    Token("-0.0", "valid"),
    Token("0e0", "valid"),
    Token("1E2", "valid"),
    Token("1e308", "valid"),
    Token("123456789012345678901234567890", "valid"),
    Token("1e-400", "either"),  # underflows to 0.0
    Token("9" * 5000, "either"),  # beyond Python's default int digits limit
)
_RANK = {"valid": 0, "either": 1, "malformed": 2}
MAX_DEPTH = 64  # the API's nesting limit for bodies (docs/api.md, MALFORMED_JSON)


@dataclass(frozen=True)
class _Text:
    """Punctuation already rendered (while :func:`render` walks a tree)."""

    text: str


def render(value: Any, ascii_only: bool = False) -> str:
    """JSON text of a raw tree; strings holding a lone surrogate are always escaped.
    Iterative: trees may nest deeper than Python's recursion limit allows."""
    out: list[str] = []
    stack: list[Any] = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, _Text | Token):
            out.append(node.text)
        elif isinstance(node, Members | dict):
            pairs = node.pairs if isinstance(node, Members) else tuple(node.items())
            parts: list[Any] = [_Text("{")]
            for i, (key, item) in enumerate(pairs):
                parts += [_Text(("," if i else "") + _string(key, ascii_only) + ":"), item]
            stack.extend(reversed([*parts, _Text("}")]))
        elif isinstance(node, list):
            parts = [_Text("[")]
            for i, item in enumerate(node):
                parts += [_Text(",")] if i else []
                parts.append(item)
            stack.extend(reversed([*parts, _Text("]")]))
        elif isinstance(node, str):
            out.append(_string(node, ascii_only))
        else:
            out.append(json.dumps(node))
    return "".join(out)


def _string(text: str, ascii_only: bool) -> str:
    return json.dumps(text, ensure_ascii=ascii_only or _has_surrogate(text))


def _has_surrogate(text: str) -> bool:
    return any(0xD800 <= ord(c) <= 0xDFFF for c in text)


def verdict(value: Any) -> str:
    """valid: strict JSON the service can store; malformed: it must answer 400
    MALFORMED_JSON; either: both answers are acceptable."""
    worst = "valid"
    depth, stack = 0, [(value, 1)]
    while stack:
        node, level = stack.pop()
        depth = max(depth, level)
        found = "valid"
        if isinstance(node, Token):
            found = node.verdict
        elif isinstance(node, str):
            found = "malformed" if _has_surrogate(node) else "valid"
        elif isinstance(node, Members | dict):
            pairs = node.pairs if isinstance(node, Members) else tuple(node.items())
            names = [k for k, _ in pairs]
            if len(set(names)) != len(names) or any(_has_surrogate(k) for k in names):
                found = "malformed"
            stack.extend((v, level + 1) for _, v in pairs)
        elif isinstance(node, list):
            stack.extend((v, level + 1) for v in node)
        worst = max(worst, found, key=_RANK.__getitem__)
    if depth > MAX_DEPTH + 1:
        worst = "malformed"
    elif depth >= MAX_DEPTH and worst == "valid":
        worst = "either"  # the boundary itself is the service's to define
    return worst


@cache
def raw_values() -> st.SearchStrategy[Any]:
    """Values for raw bodies: storable JSON, odd tokens, lone surrogates, deep nests."""
    deep = st.builds(
        lambda depth, leaf, as_list: _nest_raw(depth, leaf, as_list),
        st.sampled_from([1, 10, 40, 60, 63, 64, 65, 66, 100]),
        st.one_of(st.sampled_from(TOKENS), scalars()),
        st.booleans(),
    )
    return st.one_of(
        json_values(),
        st.sampled_from(TOKENS),
        with_lone_surrogate(),
        deep,
        st.dictionaries(with_lone_surrogate(), scalars(), min_size=1, max_size=1),
    )


def _nest_raw(depth: int, leaf: Any, as_list: bool) -> Any:
    value = leaf
    for _ in range(depth):
        value = [value] if as_list else Members((("a", value),))
    return value


def _as_tree(value: Any) -> Any:
    if isinstance(value, dict):
        return Members(tuple((k, _as_tree(v)) for k, v in value.items()))
    if isinstance(value, list):
        return [_as_tree(v) for v in value]
    return value


def _containers(tree: Any) -> list[tuple[int, ...]]:
    """Paths (child indices) of every object and array in a raw tree."""
    found, stack = [], [(tree, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, Members):
            children = [v for _, v in node.pairs]
        elif isinstance(node, list):
            children = node
        else:
            continue
        found.append(path)
        stack.extend((child, (*path, i)) for i, child in enumerate(children))
    return sorted(found)


def _edit(tree: Any, path: tuple[int, ...], change: Any) -> Any:
    if not path:
        return change(tree)
    head, rest = path[0], path[1:]
    if isinstance(tree, Members):
        pairs = list(tree.pairs)
        pairs[head] = (pairs[head][0], _edit(pairs[head][1], rest, change))
        return Members(tuple(pairs))
    items = list(tree)
    items[head] = _edit(items[head], rest, change)
    return items


@st.composite
def hostile_bodies(draw: st.DrawFn, base: dict[str, Any]) -> Any:
    """``base`` (a body the endpoint accepts) with 1-3 hostile edits: a member or item
    inserted or replaced by a raw value, or a member name repeated."""
    tree = _as_tree(base)
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.sampled_from(_containers(tree)))
        kind = draw(st.sampled_from(["insert", "replace", "duplicate"]))
        value = draw(raw_values())
        name = draw(st.one_of(texts(max_size=8), st.sampled_from(["ops", "value", "path", "a"])))

        def change(node: Any, kind: str = kind, value: Any = value, name: str = name) -> Any:
            if isinstance(node, Members):
                pairs = list(node.pairs)
                if kind == "duplicate" and pairs:
                    i = draw(st.integers(0, len(pairs) - 1))
                    same = draw(st.booleans())
                    pairs.append((pairs[i][0], pairs[i][1] if same else value))
                elif kind == "replace" and pairs:
                    i = draw(st.integers(0, len(pairs) - 1))
                    pairs[i] = (pairs[i][0], value)
                else:
                    pairs.insert(draw(st.integers(0, len(pairs))), (name, value))
                return Members(tuple(pairs))
            items = list(node)
            if kind == "replace" and items:
                items[draw(st.integers(0, len(items) - 1))] = value
            else:
                items.insert(draw(st.integers(0, len(items))), value)
            return items

        tree = _edit(tree, where, change)
    return tree


# -- documents: values per section, contents, pointers, ops ----------------------------


def good_timestamps() -> st.SearchStrategy[str]:
    return st.datetimes(datetime(2000, 1, 1), datetime(2100, 1, 1)).map(
        lambda d: d.strftime("%Y-%m-%dT%H:%M:%SZ")
    )


@cache
def spellings(name: str) -> st.SearchStrategy[str]:
    """Other spellings of ``name`` that a person reads as the same word: case changes,
    invisible characters inserted, full-width letters, surrounding space, and their
    combinations."""
    case = st.lists(st.booleans(), min_size=len(name), max_size=len(name)).map(
        lambda flags: "".join(c.upper() if f else c for c, f in zip(name, flags, strict=True))
    )

    def insert(base: str, position: int, mark: str) -> str:
        at = position % (len(base) + 1)
        return base[:at] + mark + base[at:]

    invisible = st.builds(insert, case, st.integers(0, 20), st.sampled_from(ZERO_WIDTH + BIDI))
    full = case.map(lambda s: "".join(chr(ord(c) + 0xFEE0) for c in s))
    both = st.builds(insert, full, st.integers(0, 20), st.sampled_from(ZERO_WIDTH + BIDI))
    spaced = st.builds(
        lambda before, word, after: before + word + after,
        st.sampled_from(["", " ", "\t", "\u00a0"]),
        st.one_of(case, invisible, full),
        st.sampled_from(["", " ", "\n", "\u3000"]),
    )
    return st.one_of(case, invisible, full, both, spaced).filter(lambda s: s != name)


evidence = st.fixed_dictionaries(
    {},
    optional={
        "conversation_id": texts(max_size=20),
        "message_ids": st.lists(texts(max_size=10), max_size=3),
    },
)
preference = mostly(  # now and then the old shape, a bare string, which the schema refuses
    st.fixed_dictionaries(
        {"text": texts(1, 60)},
        optional={"topic": texts(max_size=20), "last_verified_at": good_timestamps()},
    ),
    texts(1, 60),
    odds=4,
)
fact = st.fixed_dictionaries(
    {
        "fact": texts(1, 60),
        "confidence": st.floats(0, 1),
        "evidence": evidence,
        "last_verified_at": good_timestamps(),
    },
    optional={"id": texts(max_size=10), "ttl_class": st.sampled_from(["short", "permanent"])},
)
pending = st.fixed_dictionaries(
    {
        "candidate": json_values(),
        "target_path": mostly(
            st.sampled_from(["/durable_facts/-", "/preferences/-"]), texts(max_size=20), odds=4
        ),
        "proposed_at": good_timestamps(),
    },
    optional={
        "op": st.sampled_from(["add", "replace"]),
        "confidence": st.one_of(st.none(), st.floats(0, 1)),
        "proposed_by": texts(max_size=20),
    },
)
project_entry = st.fixed_dictionaries(
    {"project_id": st.sampled_from(["alpha", "beta.2", "-bad", "a" * 129])},
    optional={"name": texts(max_size=20), "aliases": st.lists(texts(max_size=10), max_size=2)},
)
facet_value = st.one_of(texts(max_size=40), st.lists(texts(max_size=20), max_size=3))
facet_name = mostly(
    texts(1, 15),
    st.one_of(spellings("secrets"), spellings("credentials"), st.just("secrets")),
    odds=4,
)
note = mostly(  # now and then the old shape, a bare string, which the schema refuses
    st.fixed_dictionaries(
        {"note": texts(1, 60)}, optional={"at": good_timestamps(), "extra": json_values()}
    ),
    texts(1, 60),
    odds=4,
)
profile_value = st.one_of(texts(max_size=40), st.integers(), st.booleans(), st.floats(0, 10))

# For each binding: section -> (items of an array section | members of an object section,
# "array" | "object" | "scalar").
SECTIONS: dict[str, dict[str, tuple[st.SearchStrategy[Any], str]]] = {
    "user_dynamic": {
        "preferences": (preference, "array"),
        "durable_facts": (fact, "array"),
        "pending_confirmations": (pending, "array"),
        "projects_index": (project_entry, "array"),
    },
    "project_doc": {
        "summary": (texts(max_size=80), "scalar"),
        "facets": (facet_value, "object"),
        "recent_notes": (note, "array"),
    },
    "user_static": {
        "profile": (profile_value, "object"),
        "user_instructions": (texts(max_size=50), "array"),
    },
}


# Where chained ops can grow a document downwards: array section -> member of its items
# whose schema admits any value.
DEEP_HOMES = {
    "user_dynamic": ("pending_confirmations", "candidate"),
    "project_doc": ("recent_notes", "extra"),
}


@cache
def section_values(binding_id: str, section: str) -> st.SearchStrategy[Any]:
    """A whole section: a list of items, an object of members, or a scalar."""
    items, kind = SECTIONS[binding_id][section]
    if kind == "array":
        return st.lists(items, max_size=5)
    if kind == "object":
        names = facet_name if binding_id == "project_doc" else texts(1, 15)
        return st.dictionaries(names, items, max_size=4)
    return items


@st.composite
def contents(draw: st.DrawFn, target: Target) -> dict[str, Any]:
    """Whole contents for an admin PUT: mostly schema-shaped, sometimes not at all."""
    sections = SECTIONS[target.binding_id]
    shaped = {
        name: draw(section_values(target.binding_id, name))
        for name in sections
        if draw(st.integers(0, 9)) > 0  # now and then a required section is missing
    }
    if draw(st.integers(0, 4)) == 0:
        shaped[draw(texts(1, 10))] = draw(json_values())
    if draw(st.integers(0, 5)) == 0:  # a section beyond its array limit
        limits = target.binding.get("array_limits", {})
        if limits:
            pointer, limit = draw(st.sampled_from(sorted(limits.items())))
            items, _ = sections[pointer.strip("/")]
            shaped[pointer.strip("/")] = [draw(items)] * (limit + 1)
    if draw(st.integers(0, 9)) == 0:
        return draw(st.dictionaries(texts(max_size=10), json_values(), max_size=3))
    return shaped


def escape(segment: str) -> str:
    return segment.replace("~", "~0").replace("/", "~1")


def pointer_of(segments: tuple[str, ...]) -> str:
    return "".join("/" + escape(s) for s in segments)


def existing_pointers(content: Any) -> list[str]:
    """The pointer of ``/content`` and of everything inside it (iteratively: documents
    may be deep)."""
    found, stack = [], [(content, ("content",))]
    while stack:
        node, base = stack.pop()
        found.append(pointer_of(base))
        if isinstance(node, dict):
            stack.extend((value, (*base, key)) for key, value in node.items())
        elif isinstance(node, list):
            stack.extend((value, (*base, str(i))) for i, value in enumerate(node))
    return sorted(found)


HOSTILE_POINTERS = (
    "",
    "/",
    "/-",
    "/content",
    "/content/",
    "/doc_id",
    "/change_id",
    "/updated_by",
    "/created_at",
    "/schema_id",
    "/etag",
    "/content/~2",
    "/content/~",
    "/content/preferences/~01",
    "content/preferences/-",
    "/content/preferences/-/text",
    "/content/preferences/-1",
    "/content/preferences/01",
    "/content/preferences/99999999999999999999",
    "/content/preferences/ 1",
    "/content/preferences/\uff11",  # full-width 1
    "/content/preferences/1e0",
    "/content/Preferences/-",
    "/content/preferences\u200b/-",
    "/content/../doc_id",
    "/content/%2E%2E/doc_id",
    "/content/pending_confirmations/0/candidate",
    "/content/pending_confirmations/0/candidate/x",
    "/content/pending_confirmations/-/candidate",
    "/content/durable_facts/0/credentials",
    "/content/preferences/0/credentials",
    "/content/facets/secrets",
    "/content/facets/credentials",
    "/content/recent_notes/0/extra",
    "/content/profile/x",
)


@cache
def _plausible_pointers(binding_id: str) -> st.SearchStrategy[str]:
    """Where a well-meaning agent writes: appends, indices, new members of objects."""
    sections = SECTIONS[binding_id]
    arrays = sorted(s for s, (_, kind) in sections.items() if kind == "array")
    objects = sorted(s for s, (_, kind) in sections.items() if kind == "object")
    choices = [
        st.builds(lambda s: f"/content/{s}/-", st.sampled_from(arrays)),
        st.builds(lambda s, i: f"/content/{s}/{i}", st.sampled_from(arrays), st.integers(0, 3)),
    ]
    if objects:
        names = facet_name if binding_id == "project_doc" else texts(1, 15)
        choices.append(
            st.builds(
                lambda s, name: f"/content/{s}/{escape(name)}", st.sampled_from(objects), names
            )
        )
    if "summary" in sections:
        choices.append(st.just("/content/summary"))
    return st.one_of(choices)


@cache
def _hostile_pointers(binding_id: str) -> st.SearchStrategy[str]:
    arrays = sorted(s for s, (_, kind) in SECTIONS[binding_id].items() if kind == "array")
    choices = [
        st.sampled_from(HOSTILE_POINTERS),
        st.builds(lambda s, i: f"/content/{s}/{i}", st.sampled_from(arrays), st.integers(4, 10**6)),
    ]
    if binding_id == "user_dynamic":
        choices.append(
            st.builds(
                lambda s, i, name: f"/content/{s}/{i}/{escape(name)}",
                st.sampled_from(["durable_facts", "preferences"]),
                st.sampled_from(["0", "-"]),
                spellings("credentials"),
            )
        )
    return st.one_of(choices)


def pointers(target: Target, content: Any) -> st.SearchStrategy[str]:
    """Pointers into the current content or next to it, now and then hostile ones."""
    usual = st.one_of(
        st.sampled_from(existing_pointers(content)), _plausible_pointers(target.binding_id)
    )
    return mostly(usual, _hostile_pointers(target.binding_id), odds=5)


def value_for(target: Target, path: str) -> st.SearchStrategy[Any]:
    """A value that fits ``path`` in the binding's schema, or any JSON value."""
    parts = path.split("/")
    section = parts[2] if len(parts) > 2 and parts[1] == "content" else None
    return _values_at(target.binding_id, section, min(len(parts), 5))


@cache
def _values_at(binding_id: str, section: str | None, depth: int) -> st.SearchStrategy[Any]:
    known = SECTIONS[binding_id]
    if section in known and depth == 3:
        shaped = section_values(binding_id, section)
    elif section in known and depth == 4:
        shaped = known[section][0]
    else:
        shaped = json_values()
    return st.one_of(shaped, shaped, json_values())


OP_NAMES = ("add", "add", "add", "replace", "replace", "remove", "move", "copy", "test")
ODD_OP_NAMES = ("ADD", "", "get", "_get", None, 7, ["add"])


@st.composite
def ops(draw: st.DrawFn, target: Target, content: Any) -> dict[str, Any]:
    name = draw(mostly(st.sampled_from(OP_NAMES), st.sampled_from(ODD_OP_NAMES), odds=15))
    path = draw(pointers(target, content))
    op: dict[str, Any] = {"op": name, "path": path}
    if name in ("add", "replace", "test") or draw(st.integers(0, 9)) == 0:
        op["value"] = draw(value_for(target, path))
    if name in ("move", "copy"):
        op["from"] = draw(pointers(target, content))
    damage = draw(st.sampled_from([None] * 30 + ["no-path", "path-not-string", "extra"]))
    if damage == "no-path":
        del op["path"]
    elif damage == "path-not-string":
        op["path"] = draw(st.one_of(st.integers(), st.none(), st.lists(st.just("/content"))))
    elif damage == "extra":
        op[draw(texts(1, 8))] = draw(json_values())
    return op


@st.composite
def patches(draw: st.DrawFn, target: Target, content: Any) -> list[dict[str, Any]]:
    count = draw(st.sampled_from([0, 1, 1, 1, 2, 2, 3, 4, 6, 25, 26]))
    return [draw(ops(target, content)) for _ in range(count)]


@st.composite
def plausible_patches(draw: st.DrawFn, target: Target, content: Any) -> dict[str, Any]:
    """A PATCH body a well-meaning agent sends: known ops on existing or nearby pointers
    with values shaped for the binding, confident and with evidence (still refused now
    and then: a path not writable, an index out of range, a limit reached)."""
    usual = st.one_of(
        st.sampled_from(existing_pointers(content)), _plausible_pointers(target.binding_id)
    )
    found = []
    for _ in range(draw(st.integers(1, 3))):
        name = draw(
            st.sampled_from(["add", "add", "add", "replace", "remove", "move", "copy", "test"])
        )
        path = draw(usual)
        op: dict[str, Any] = {"op": name, "path": path}
        if name in ("add", "replace", "test"):
            op["value"] = draw(_shaped_at(target.binding_id, path))
        if name in ("move", "copy"):
            op["from"] = draw(usual)
        found.append(op)
    body: dict[str, Any] = {"ops": found}
    confidence = draw(st.sampled_from([None, 0.9, 1, 0.75]))
    if confidence is not None:
        body.update(confidence=confidence, evidence={"message_ids": ["m1"]})
    return body


def _shaped_at(binding_id: str, path: str) -> st.SearchStrategy[Any]:
    parts = path.split("/")
    known = SECTIONS[binding_id]
    section = parts[2] if len(parts) > 2 and parts[1] == "content" else None
    if section in known and len(parts) == 3:
        return section_values(binding_id, section)
    if section in known and len(parts) == 4:
        return known[section][0]
    return texts(1, 20)


@st.composite
def patch_extras(draw: st.DrawFn) -> dict[str, Any]:
    """The members of a PATCH body besides ``ops``, mostly valid."""
    extras: dict[str, Any] = {}
    confidence = draw(
        mostly(
            st.sampled_from([None, None, 0.5, 0.75, 0.8, 0.9, 1, 0, -0.0]),
            st.sampled_from([2, -0.1, True, "0.9", 1e-320]),
        )
    )
    if confidence is not None:
        extras["confidence"] = confidence
    ev = draw(
        mostly(st.one_of(st.none(), evidence), st.sampled_from(["m1", [], {"x": "y" * 5000}]))
    )
    if ev is not None:
        extras["evidence"] = ev
    reason = draw(
        mostly(
            st.sampled_from([None, "live_update", "replay_update"]),
            st.sampled_from(["admin_migration", "LIVE"]),
        )
    )
    if reason is not None:
        extras["reason"] = reason
    for name, values in (
        ("profile_id", ["project-copilot-v1", "nope", "../x", ""]),
        ("binding_id", ["user_dynamic", "project_doc", "user_static", "x\u200b"]),
    ):
        if draw(st.integers(0, 19)) == 0:
            extras[name] = draw(st.sampled_from(values))
    return extras


# -- identifiers ----------------------------------------------------------------------

SEGMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
RAW_IDS = (
    "..",
    ".",
    "%2E%2E",
    "%2e",
    "..%2F..",
    "a%2Fb",
    "%2F",
    "a%252Fb",
    "alpha%2Ejson",
    "%00",
    "a%00b",
    "%",
    "%zz",
    "a%",
    "%C0%AE",
    "%EF%BC%8E",
    "%E2%80%8Bt1",
    "t1%E2%80%8B",
    "%EF%BD%94%EF%BC%91",
    "con",
    "NUL",
    "a:b",
    "~",
    "-a",
    "_a",
    ".a",
    "a.",
    "a..b",
    "A" * 128,
    "A" * 129,
    "a" * 3000,
    "t1",
    "u1",
    "user",
    "projects",
)


@cache
def identifiers() -> st.SearchStrategy[str]:
    """Identifiers as they appear in a URL (percent-encoded where needed, or raw)."""
    alphabet = st.one_of(
        st.sampled_from("abcXYZ019._-"), st.sampled_from(TRICKY), st.characters(codec="utf-8")
    )
    generated = st.text(alphabet, min_size=1, max_size=140).map(lambda s: quote(s, safe=""))
    return st.one_of(st.sampled_from(RAW_IDS), generated)


def valid_identifier(encoded: str) -> bool:
    decoded = unquote(encoded)
    return SEGMENT.fullmatch(decoded) is not None and decoded not in (".", "..")


@st.composite
def document_paths(draw: st.DrawFn) -> str:
    """Namespace-relative document paths as they appear in a URL."""
    segments = draw(st.lists(identifiers(), min_size=1, max_size=10))
    suffix = draw(st.sampled_from([".json", ".json", ".JSON", ".json%00", "", ".json/", "%2Ejson"]))
    joiner = draw(st.sampled_from(["/", "/", "%2F", "/./", "//"]))
    return joiner.join(segments) + suffix


def valid_document_path(encoded: str) -> bool:
    # decoded once, except %2F, which stays as sent (docs/api.md: "%2F is not a /")
    decoded = unquote(re.sub("%2[Ff]", "%252F", encoded))
    segments = decoded.split("/")
    return (
        len(decoded) <= 512
        and decoded.endswith(".json")
        and len(segments) <= 8
        and all(SEGMENT.fullmatch(s) and ".." not in s for s in segments)
    )


# -- timestamps -----------------------------------------------------------------------

RFC3339 = re.compile(
    r"(?P<y>[0-9]{4})-(?P<mo>[0-9]{2})-(?P<d>[0-9]{2})[Tt ]"
    r"(?P<h>[0-9]{2}):(?P<mi>[0-9]{2}):(?P<s>[0-9]{2})(?P<f>\.[0-9]+)?"
    r"(?P<z>[Zz]|(?P<sign>[+-])(?P<oh>[0-9]{2}):(?P<om>[0-9]{2}))"
)
CANONICAL = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{3}|\.[0-9]{6})?(Z|[+-][0-9]{2}:[0-9]{2})"
)


def instant(text: str) -> datetime | None:
    """The UTC instant of an RFC 3339 date-time (lowercase ``t``/``z`` and a space
    separator allowed, as RFC 3339 section 5.6 notes), or None if it is not one. A leap
    second (``:60``) is RFC 3339 but has no instant here: None."""
    m = RFC3339.fullmatch(text)
    if m is None:
        return None
    offset = timedelta(0)
    if m["sign"]:
        if int(m["oh"]) > 23 or int(m["om"]) > 59:
            return None
        offset = timedelta(hours=int(m["oh"]), minutes=int(m["om"]))
        offset = -offset if m["sign"] == "-" else offset
    fraction = int((m["f"] or ".0")[1:7].ljust(6, "0"))
    try:
        local = datetime(
            int(m["y"]), int(m["mo"]), int(m["d"]), int(m["h"]), int(m["mi"]), int(m["s"]), fraction
        )
        return (local - offset).replace(tzinfo=UTC)
    except (ValueError, OverflowError):
        return None


def is_rfc3339_shaped(text: str) -> bool:
    """RFC 3339 grammar with in-range fields (leap seconds allowed)."""
    m = RFC3339.fullmatch(text)
    if m is None:
        return False
    leap = m["s"] == "60"
    return instant(text.replace(":60", ":59", 1) if leap else text) is not None


def must_be_accepted(text: str) -> bool:
    """Plainly valid: canonical form, a real instant, years far from 1 and 9999."""
    moment = instant(text)
    return (
        CANONICAL.fullmatch(text) is not None
        and moment is not None
        and 1000 <= moment.year <= 9998
        and 1000 <= int(text[:4]) <= 9998
    )


@st.composite
def timestamps(draw: st.DrawFn) -> str:
    year = draw(st.one_of(st.sampled_from([0, 1, 1969, 2026, 9999, 10000]), st.integers(0, 10000)))
    month = draw(st.one_of(st.integers(1, 12), st.sampled_from([0, 13])))
    day = draw(st.one_of(st.integers(1, 28), st.sampled_from([0, 29, 30, 31, 32])))
    hour = draw(st.one_of(st.integers(0, 23), st.just(24)))
    minute = draw(st.one_of(st.integers(0, 59), st.just(60)))
    second = draw(st.one_of(st.integers(0, 59), st.just(60)))
    date = draw(
        st.sampled_from(
            [
                f"{year:04d}-{month:02d}-{day:02d}",
                f"{year:04d}-{month:02d}-{day:02d}",
                f"{year:04d}-{month:02d}-{day:02d}",
                f"{year:04d}{month:02d}{day:02d}",
                f"{year:04d}-W{min(month * 4, 53):02d}-{(day % 7) + 1}",
                f"{year:04d}-{(month * 28 + day) % 367:03d}",
                f"{year}-{month}-{day}",
            ]
        )
    )
    separator = draw(st.sampled_from(["T", "T", "T", "t", " ", "_", ""]))
    fraction = draw(st.sampled_from(["", "", "", ".5", ".123", ".123456", ".123456789", ",5"]))
    clock = draw(
        st.sampled_from(
            [
                f"{hour:02d}:{minute:02d}:{second:02d}{fraction}",
                f"{hour:02d}:{minute:02d}:{second:02d}{fraction}",
                f"{hour:02d}:{minute:02d}",
                f"{hour:02d}",
                f"{hour:02d}{minute:02d}{second:02d}",
            ]
        )
    )
    zone = draw(
        st.sampled_from(
            [
                "Z",
                "Z",
                "z",
                "",
                "+00:00",
                "-00:00",
                "+05:30",
                "-12:00",
                "+14:00",
                "+0530",
                "+05",
                "+24:00",
                "+00:60",
                "+00:00:00",
                "UTC",
                " Z",
            ]
        )
    )
    text = date + separator + clock + zone
    damage = draw(st.sampled_from([None] * 8 + ["zero-width", "full-width", "space", "nul"]))
    if damage == "zero-width":
        text = text[:4] + "\u200b" + text[4:]
    elif damage == "full-width":
        text = "".join(chr(ord(c) + 0xFEE0) if c.isdigit() else c for c in text[:4]) + text[4:]
    elif damage == "space":
        text += "\n"
    elif damage == "nul":
        text += "\x00"
    return text


# -- headers --------------------------------------------------------------------------

VALID_KEY = re.compile(r"[\x21-\x7e]{1,255}")


@cache
def idempotency_keys() -> st.SearchStrategy[str]:
    return st.one_of(
        st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=255),
        st.sampled_from(["", " ", "a b", "k\t", "é", "k\u200b", "x" * 256, "y" * 20_000]),
        texts(max_size=40),
    )


def garbage_if_match(current: str | None) -> st.SearchStrategy[str]:
    known = [current] if current else []
    return st.one_of(
        st.sampled_from(
            [
                *known,
                *(f"W/{c}" for c in known),
                *(f" {c} " for c in known),
                *(c.strip('"') for c in known),
                *(f"{c}, {c}" for c in known),
                '"0xSTALE"',
                "*",
                '"',
                '""',
                "",
                " ",
                '"a" , "b"',
                '"' + "0" * 300 + '"',
                "W/",
            ]
        ),
        texts(max_size=30),
    )


# Content types and whether docs/api.md lets a JSON body carry them (JSON, or another
# ``+json`` type, in UTF-8); any other is 415.
CONTENT_TYPES = {
    "application/json": True,
    "application/json; charset=utf-8": True,
    "application/json;charset=UTF-8": True,
    "APPLICATION/JSON": True,
    "application/merge-patch+json": True,
    "application/json-patch+json": True,
    "text/plain": False,
    "application/x-www-form-urlencoded": False,
    "multipart/form-data; boundary=x": False,
    "application/json; charset=utf-16": False,
    "application/json; charset=latin-1": False,
    "application/jsonx": False,
    "": False,
    "garbage": False,
}
ENCODINGS = (
    "utf-8",
    "utf-8-sig",
    "utf-16",
    "utf-16-le",
    "utf-16-be",
    "utf-32",
    "latin-1",
    "cp1252",
)


def encode(text: str, encoding: str) -> bytes:
    return text.encode(encoding, errors="replace")


def must_refuse_encoding(text: str, encoding: str) -> bool:
    """Whether ``text`` encoded so is not plain UTF-8 JSON, which docs/api.md refuses:
    UTF-16/32, a byte order mark, bytes that are not UTF-8."""
    return encoding.startswith(("utf-16", "utf-32")) or must_be_415(text, encoding)


def must_be_415(text: str, encoding: str) -> bool:
    """Refusals that can only be 415: a byte order mark, or bytes that are not UTF-8.
    (UTF-16/32 of ASCII text without a byte order mark is valid UTF-8 full of NULs, and
    then 400 MALFORMED_JSON refuses it as well as 415 would.)"""
    data = encode(text, encoding)
    if data.startswith((codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False
