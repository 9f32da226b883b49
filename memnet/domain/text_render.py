"""The text form of a memory document (``render: "text"``, docs/context.md): what an LLM
and a person can both read, written from the content's own shape and the profile's
``context_rules.rendering``; no section or member is named here. Pure.

A document becomes one section::

    ### memory user_dynamic (user/user_dynamic.json), updated 2026-11-24
    preferences:
    - Prefers diagrams over long prose (last_verified_at: 2026-11-24)
    durable_facts:
    - Works on project alpha. (confidence: 0.9; last_verified_at: 2026-11-22)

- An object's members are lines ``key: value``, in stored order. A member holding an
  object or a list is a line ``key:`` with its content below: an object's members
  indented two spaces, a list's items as bullets (``- ``) at the key's indent.
- An object that is a list item is one bullet line: its text (the first of
  ``text_fields`` holding a non-empty string), then its other inline members in
  parentheses; without a text field, those members alone. Inline members are scalars
  and lists of scalars (joined by ``, ``), written ``key: value`` and joined by ``; ``.
  Its other members follow, indented. A member holding an object with a text field is
  written the same way after its key (``candidate: Lives in Lisbon (...)``).
- Strings are written as stored, an RFC 3339 date-time as its date; numbers and
  booleans as JSON. Empty strings, null, empty objects and lists, and members named in
  ``omit_fields`` are left out.

Memory text is untrusted: a stored value may hold an injected instruction, so no key or
value can forge structure. Line breaks, other control characters and bidirectional
controls are written as escapes (``\\n``, ``\\u2028``), so a value never leaves its line;
and a ``#`` before the first letter or digit of a key or value gets a backslash
(``\\#``), so that no line but a section header starts, after indentation, bullets and
punctuation, with ``#``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from memnet.domain.profiles import RenderRules
from memnet.domain.timestamps import written_date

INDENT = "  "
BULLET = "- "
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def header(binding_id: str, namespace: str, path: str, updated_at: Any) -> str:
    """A section's first line: ``### memory <binding_id> (<namespace>/<path>)``, then
    ``, updated <date>`` when the document says when."""
    line = f"### memory {escape(binding_id)} ({escape(namespace)}/{escape(path)})"
    return f"{line}, updated {scalar(updated_at)}" if _present(updated_at) else line


def content_lines(content: Any, rules: RenderRules) -> list[str]:
    """The lines that write ``content`` (none for empty content)."""
    return list(_value_lines(content, 0, rules))


def escape(text: str) -> str:
    """``text`` on one line, unable to start a header (see the module docstring)."""
    return _UNSAFE.sub(_escaped, _guard_hash(text))


def scalar(value: Any) -> str:
    """A string, number or boolean as the text writes it."""
    if isinstance(value, str):
        return escape(written_date(value) or value)
    return json.dumps(value)


def _escaped(found: re.Match[str]) -> str:
    char = found.group()
    return _SHORT_ESCAPES.get(char) or f"\\u{ord(char):04x}"


def _guard_hash(text: str) -> str:
    """A backslash before each ``#`` that comes before the first letter or digit."""
    for position, char in enumerate(text):
        if char.isalnum():
            head = text[:position]
            return head.replace("#", "\\#") + text[position:] if "#" in head else text
    return text.replace("#", "\\#")


# -- blocks ----------------------------------------------------------------------------


def _value_lines(value: Any, depth: int, rules: RenderRules) -> Iterator[str]:
    if isinstance(value, Mapping):
        yield from _member_lines(value, depth, rules)
    elif isinstance(value, list):
        yield from _bullet_lines(value, depth, rules)
    elif _present(value):
        yield INDENT * depth + scalar(value)


def _member_lines(members: Mapping[str, Any], depth: int, rules: RenderRules) -> Iterator[str]:
    for key, value in _shown(members, rules):
        yield from _keyed_lines(escape(key), value, depth, rules)


def _keyed_lines(key: str, value: Any, depth: int, rules: RenderRules) -> Iterator[str]:
    pad = INDENT * depth
    if not isinstance(value, Mapping | list):
        yield f"{pad}{key}: {scalar(value)}"
    elif isinstance(value, Mapping) and _text_field(value, rules) is not None:
        yield f"{pad}{key}: {_item_line(value, rules)}"
        yield from _member_lines(_nested(value, rules), depth + 1, rules)
    else:
        yield f"{pad}{key}:"
        yield from _value_lines(value, depth + (0 if isinstance(value, list) else 1), rules)


def _bullet_lines(items: list[Any], depth: int, rules: RenderRules) -> Iterator[str]:
    pad = INDENT * depth
    for item in (i for i in items if _present(i)):
        if isinstance(item, Mapping):
            yield f"{pad}{BULLET}{_item_line(item, rules)}".rstrip()
            yield from _member_lines(_nested(item, rules), depth + 1, rules)
        elif isinstance(item, list):
            yield f"{pad}{BULLET}".rstrip()
            yield from _bullet_lines(item, depth + 1, rules)
        else:
            yield f"{pad}{BULLET}{scalar(item)}"


# -- items -----------------------------------------------------------------------------


def _item_line(item: Mapping[str, Any], rules: RenderRules) -> str:
    """An object on one line: its text and, in parentheses, its inline members; or
    those members alone."""
    lead = _text_field(item, rules)
    pairs = "; ".join(
        f"{escape(key)}: {_inline_text(value)}"
        for key, value in _shown(item, rules)
        if key != lead and _inline(value)
    )
    if lead is None:
        return pairs
    text = scalar(item[lead])
    return f"{text} ({pairs})" if pairs else text


def _text_field(item: Mapping[str, Any], rules: RenderRules) -> str | None:
    """The first of ``text_fields`` that holds a non-empty string (and is not omitted)."""
    for name in rules.text_fields:
        value = item.get(name)
        if isinstance(value, str) and value and name not in rules.omit_fields:
            return name
    return None


def _nested(item: Mapping[str, Any], rules: RenderRules) -> dict[str, Any]:
    """The members an item line leaves for the lines below it."""
    return {key: value for key, value in _shown(item, rules) if not _inline(value)}


def _inline(value: Any) -> bool:
    if isinstance(value, list):
        return all(not isinstance(v, Mapping | list) for v in value)
    return not isinstance(value, Mapping)


def _inline_text(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(scalar(v) for v in value if _present(v))
    return scalar(value)


def _shown(members: Mapping[str, Any], rules: RenderRules) -> Iterator[tuple[str, Any]]:
    """The members that are written: present, and not omitted."""
    for key, value in members.items():
        if key not in rules.omit_fields and _present(value):
            yield key, value


def _present(value: Any) -> bool:
    """Whether a value is written at all: not null, nor an empty string, nor an object or
    list holding only such."""
    if isinstance(value, list):
        return any(_present(v) for v in value)
    if isinstance(value, Mapping):
        return any(_present(v) for v in value.values())
    return value is not None and value != ""
