"""JSON Pointer (RFC 6901) helpers that compare whole segments, never string prefixes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

Segments = tuple[str, ...]
WILDCARD = "*"


def parse(pointer: str) -> Segments:
    """Split ``pointer`` into unescaped segments; ``""`` is the root. Raises ValueError."""
    if pointer == "":
        return ()
    if not pointer.startswith("/"):
        raise ValueError(f"JSON Pointer must start with '/': {pointer!r}")
    return tuple(_unescape(s) for s in pointer[1:].split("/"))


def _unescape(segment: str) -> str:
    if "~" in segment.replace("~0", "").replace("~1", ""):
        raise ValueError(f"invalid '~' escape in JSON Pointer segment {segment!r}")
    return segment.replace("~1", "/").replace("~0", "~")


def render(segments: Segments) -> str:
    return "".join("/" + s.replace("~", "~0").replace("/", "~1") for s in segments)


def is_within(segments: Segments, prefix: Segments) -> bool:
    """True when ``segments`` equals ``prefix`` or lies below it."""
    return segments[: len(prefix)] == prefix


def matches_pattern(segments: Segments, pattern: Segments) -> bool:
    """True when ``segments`` lies at or below ``pattern``; ``*`` in the pattern matches any
    one segment."""
    if len(segments) < len(pattern):
        return False
    return all(p in (WILDCARD, s) for p, s in zip(pattern, segments, strict=False))


def walk(value: Any, base: Segments = ()) -> Iterator[Segments]:
    """Yield ``base`` and the pointer of every member nested inside ``value``."""
    yield base
    if isinstance(value, dict):
        for key, item in value.items():
            yield from walk(item, (*base, str(key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from walk(item, (*base, str(index)))


def resolve(document: Any, segments: Segments) -> Any:
    """Return the value at ``segments`` or raise KeyError."""
    node = document
    for segment in segments:
        if isinstance(node, dict) and segment in node:
            node = node[segment]
        elif isinstance(node, list) and segment.isdigit() and int(segment) < len(node):
            node = node[int(segment)]
        else:
            raise KeyError(render(segments))
    return node
