"""``memory.md`` of an export (docs/export.md): what mem.net remembers about a person,
for that person to read. Pure.

Memory text is untrusted (a stored value may hold an injected instruction or markup), so
no value can make structure: control characters and line breaks are written as escapes
(a value never leaves its line), and every character that Markdown or HTML could read as
markup (``\\ ` * _ [ ] < > & | ~ # !``) gets a backslash, which CommonMark defines as
"this character, literally". A value is never the first thing on a line (it follows a
bullet or a bold key), so nothing else can start a block.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

_CONTROL = re.compile(
    "[\x00-\x1f\x7f-\x9f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)
_MARKUP = re.compile(r"([\\`*_\[\]<>&|~#!])")
TEXT_FIELDS = ("text", "content", "summary", "title", "name", "value")


def md(value: Any) -> str:
    """A scalar as inert Markdown text on one line."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = _CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return _MARKUP.sub(r"\\\1", text)


def title(user_id: str, created_at: str) -> list[str]:
    return [
        f"# What mem.net remembers about {md(user_id)}",
        "",
        f"Written {md(created_at)}. This is a readable copy; the archive's JSON Lines "
        "parts are the complete record.",
        "",
    ]


def document(namespace: str, path: str, updated_at: Any, content: Any) -> list[str]:
    head = f"### {md(namespace)}/{md(path)}"
    if isinstance(updated_at, str):
        head += f" (updated {md(updated_at)})"
    lines = list(_value(content, 0))
    return [head, "", *(lines or ["(empty)"]), ""]


def event(record: Mapping[str, Any]) -> str:
    when = md(record.get("timestamp", ""))
    return f"- {when}: {md(record.get('digest', ''))}"


def proposal(entry: Mapping[str, Any]) -> str:
    item = entry.get("item")
    candidate = item.get("candidate") if isinstance(item, Mapping) else None
    text = _text_of(candidate) if isinstance(candidate, Mapping) else None
    said = text if text is not None else json.dumps(candidate, ensure_ascii=False)
    where = f"{entry.get('namespace', '')}/{entry.get('path', '')}"
    return f"- {md(said)} (in {md(where)}, {md(entry.get('status', 'pending'))})"


def _value(value: Any, depth: int) -> Iterator[str]:
    pad = "  " * depth
    if isinstance(value, Mapping):
        for key, member in value.items():
            if _scalar(member):
                yield f"{pad}- **{md(key)}**: {md(member)}"
            elif member:
                yield f"{pad}- **{md(key)}**:"
                yield from _value(member, depth + 1)
    elif isinstance(value, list):
        for item in value:
            yield from _item(item, depth)
    elif value is not None:
        yield f"{pad}- {md(value)}"


def _item(item: Any, depth: int) -> Iterator[str]:
    pad = "  " * depth
    if not isinstance(item, Mapping):
        yield from _value(item, depth) if not _scalar(item) else [f"{pad}- {md(item)}"]
        return
    text = _text_of(item)
    inline = [(k, v) for k, v in item.items() if _scalar(v) and v != text]
    said = md(text) if text is not None else ""
    details = "; ".join(f"{md(k)}: {md(v)}" for k, v in inline)
    yield f"{pad}- {said}" + (f" ({details})" if details else "")
    nested = {k: v for k, v in item.items() if not _scalar(v) and v}
    yield from _value(nested, depth + 1)


def _text_of(item: Mapping[str, Any]) -> str | None:
    found = (item.get(k) for k in TEXT_FIELDS)
    return next((t for t in found if isinstance(t, str) and t), None)


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)
