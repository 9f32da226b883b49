"""JSON Pointer (RFC 6901) helpers that compare whole segments, never string prefixes."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Iterator
from functools import lru_cache
from importlib import resources
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
    one segment. Segments compare as :func:`folded` names, so a denylist rule for
    ``secrets`` also holds ``Secrets``, ``secrets `` and its full-width spelling."""
    if len(segments) < len(pattern):
        return False
    return all(
        p == WILDCARD or folded(p) == folded(s) for p, s in zip(pattern, segments, strict=False)
    )


def folded(name: str) -> str:
    """``name`` as a denylist compares it: Unicode compatibility forms folded (NFKC: full
    width, ligatures), what renders as nothing removed (format and control characters,
    combining marks that do not compose, variation selectors, Hangul fillers), look-alike
    letters of other scripts folded to the ASCII letter they imitate (:func:`skeleton_of`:
    Cyrillic es, U+0441, is ``c``), case folded and surrounding white space stripped. Short names
    (most) are cached."""
    return _folded_short(name) if len(name) <= _CACHED_NAME_CHARS else _fold(name)


_CACHED_NAME_CHARS = 128  # a cache of a hostile request's megabyte names would hold GBs
_INVISIBLE = frozenset({"Cf", "Cc", "Cn", "Co", "Mn", "Me"})
_FILLERS = frozenset("\u115f\u1160\u3164\uffa0")  # Hangul fillers: letters that show nothing


def _fold(name: str) -> str:
    composed = unicodedata.normalize("NFKC", name)
    visible = "".join(
        c for c in composed if unicodedata.category(c) not in _INVISIBLE and c not in _FILLERS
    )
    return skeleton_of(unicodedata.normalize("NFKC", visible.casefold())).strip()


_folded_short = lru_cache(maxsize=4096)(_fold)


def skeleton_of(text: str) -> str:
    """``text`` with each look-alike of an ASCII letter, digit or ``.@/:-_`` replaced by
    it, then case folded: a UTS #39 skeleton restricted to what imitates ASCII (the
    table, ``confusables.json``, is generated from Unicode's confusables data; NFKC
    already folds what it covers, so callers normalise first). ASCII text is only case
    folded."""
    if text.isascii():
        return text.casefold()
    table = _confusables()
    return text.translate(table).casefold()


@lru_cache(maxsize=1)
def _confusables() -> dict[int, str]:
    raw = json.loads(resources.files("memnet.domain").joinpath("confusables.json").read_text())
    return {ord(char): ascii_ for char, ascii_ in raw["map"].items()}


def members(value: Any, enter: Callable[[str], bool]) -> Iterator[tuple[str | None, Any]]:
    """Every node of ``value`` in document order with the member name that holds it
    (None for array items and the root), not descending into members ``enter`` refuses
    (they are yielded, their insides are not; iteratively: no recursion limit)."""
    stack: list[tuple[str | None, Any]] = [(None, value)]
    while stack:
        key, node = stack.pop()
        yield key, node
        if key is not None and not enter(key):
            continue
        if isinstance(node, list):
            stack.extend((None, child) for child in reversed(node))
        elif isinstance(node, dict):
            stack.extend(reversed(node.items()))


def walk(value: Any, base: Segments = ()) -> Iterator[Segments]:
    """Yield ``base`` and the pointer of every member nested inside ``value``, parents
    before children (iteratively: no recursion limit on deep values)."""
    stack = [(value, base)]
    while stack:
        node, segments = stack.pop()
        yield segments
        if isinstance(node, dict):
            stack.extend((item, (*segments, str(key))) for key, item in reversed(node.items()))
        elif isinstance(node, list):
            stack.extend((node[i], (*segments, str(i))) for i in reversed(range(len(node))))


def depth_exceeds(value: Any, limit: int) -> bool:
    """Whether ``value`` nests deeper than ``limit`` levels (a scalar is one level).
    Level by level over containers only, so that a megabyte of ``[[],[],...]`` costs one
    pass over its items (a stack of every member cost seconds)."""
    level = [value] if isinstance(value, dict | list) else []
    for _ in range(1, limit):  # ``level`` holds the containers at this depth
        level = [
            child
            for node in level
            for child in (node.values() if isinstance(node, dict) else node)
            if isinstance(child, dict | list)
        ]
    return any(level)  # a non-empty container at the limit has members below it


_DIGITS = re.compile(r"[0-9]+")


def is_digits(segment: str) -> bool:
    """Whether ``segment`` is written in ASCII digits, as an array index is (``str.isdigit``
    also takes ``²`` and ``٣``, which ``int`` then refuses or reads)."""
    return _DIGITS.fullmatch(segment) is not None


def resolve(document: Any, segments: Segments) -> Any:
    """Return the value at ``segments`` or raise KeyError."""
    node = document
    for segment in segments:
        if isinstance(node, dict) and segment in node:
            node = node[segment]
        elif isinstance(node, list) and is_digits(segment) and int(segment) < len(node):
            node = node[int(segment)]
        else:
            raise KeyError(render(segments))
    return node
