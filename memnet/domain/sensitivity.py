"""Sensitivity classes (issue 15, capability 5; docs/profiles.md "Sensitivity"). Pure:
no I/O.

A profile's ``sensitivity_rules`` order classes from least to most sensitive
(``standard`` < ``restricted`` < ``sensitive``) and say where a class comes from: an
item's own member (``field``), a prefix of another member (``by_field``: a category
``health`` and ``health.sleep`` are ``restricted``), or the section it lies in
(``sections``). An *item*
is an object that is an element of an array; a section's class covers everything under
it. A caller sees the document *view*: the content without the array elements and
section members above its clearance. Its ops address the view; :func:`to_stored`
translates their array indexes to the stored document's, so that ``remove /x/1`` removes
what the caller saw at 1 (stored ``[H, A, B]``, view ``[A, B]``: stored index 2).
:func:`write_violations` refuses a write that changes what the caller cannot see or adds
something above its clearance.
"""

from __future__ import annotations

import json
import unicodedata
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from memnet.domain import pointers
from memnet.domain.envelope import canonical
from memnet.domain.pointers import Segments


@dataclass(frozen=True)
class SensitivityRules:
    classes: tuple[str, ...]
    item_field: str = "sensitivity"
    by_field: str | None = None
    prefixes: Mapping[str, str] = field(default_factory=dict)
    sections: tuple[tuple[Segments, str], ...] = ()

    def rank(self, name: str | None) -> int:
        """A class's place (0: least sensitive); unknown or none: 0."""
        return self.classes.index(name) if name in self.classes else 0

    def named_rank(self, value: Any) -> int:
        """The class an item's own member names, compared folded (NFKC, case, outer white
        space); absent (None) or blank: the lowest; anything else it does not name — a
        misspelling, ``"sensitive\u200b"``, a number — the highest: an item that says
        it is sensitive in a way the rules cannot read is kept from everyone below."""
        if value is None or (isinstance(value, str) and not value.strip()):
            return 0
        folded = [fold(c) for c in self.classes]
        name = fold(value) if isinstance(value, str) else None
        return folded.index(name) if name in folded else self.highest

    def clearance(self, name: str | None, admin: bool) -> int:
        """A caller's clearance: its own class if this profile has it (``*``: every
        class, the service's own jobs), the highest for an admin that names none, else
        the lowest (a class of another profile's list clears nothing here)."""
        if name in self.classes:
            return self.classes.index(name)
        if name == "*" or (name is None and admin):
            return self.highest
        return 0

    @property
    def highest(self) -> int:
        return len(self.classes) - 1

    def section_rank(self, at: Segments) -> int:
        """The highest class of the sections containing content path ``at``."""
        found = [self.rank(c) for s, c in self.sections if pointers.is_within(at, s)]
        return max(found, default=0)

    def item_rank(self, item: Any) -> int:
        """An item's own class: its ``field``, or its ``by_field`` prefix, the higher."""
        if not isinstance(item, dict):
            return 0
        own = self.named_rank(item.get(self.item_field))
        mapped = 0
        value = item.get(self.by_field) if self.by_field else None
        if isinstance(value, str):
            value = fold(value)  # " Health\n" is in the "health" class too
            for prefix, name in self.prefixes.items():
                prefix = fold(prefix)
                if value == prefix or value.startswith((prefix + ".", prefix + ":")):
                    mapped = max(mapped, self.rank(name))
        proposed = 0
        if "candidate" in item and isinstance(item.get("target_path"), str):
            # a proposal has its candidate's class, at its target (a pending item)
            try:
                target = pointers.parse(item["target_path"])
            except ValueError:
                target = ()
            proposed = max(self.item_rank(item["candidate"]), self.section_rank(target))
        return max(own, mapped, proposed)


def fold(text: str) -> str:
    """``text`` as names compare: NFKC, without outer white space, case-folded."""
    return unicodedata.normalize("NFKC", text).strip().casefold()


def parse_rules(raw: Mapping[str, Any], binding_id: str) -> SensitivityRules:
    """The rules as they apply to one binding's documents."""
    by = raw.get("by_field") or {}
    sections = raw.get("sections", {}).get(binding_id, {})
    return SensitivityRules(
        classes=tuple(raw["classes"]),
        item_field=raw.get("field", "sensitivity"),
        by_field=by.get("field"),
        prefixes=dict(by.get("prefixes", {})),
        sections=tuple((pointers.parse(p), c) for p, c in sections.items()),
    )


@dataclass
class View:
    """What a caller sees, and where the stored elements of each array it saw are."""

    content: Any
    hidden: list[Segments] = field(default_factory=list)  # stored paths left out
    visible: dict[Segments, list[int]] = field(default_factory=dict)  # array -> stored idx


def view(content: Any, rules: SensitivityRules, clearance: int) -> View:
    """``content`` without what is above ``clearance``."""
    result = View(None)
    result.content = _view(content, (), rules, clearance, result)
    return result


def _view(node: Any, at: Segments, rules: SensitivityRules, clearance: int, out: View) -> Any:
    if isinstance(node, dict):
        kept = {}
        for key, value in node.items():
            where = (*at, key)
            if rules.section_rank(where) > clearance:
                out.hidden.append(where)
                continue
            kept[key] = _view(value, where, rules, clearance, out)
        return kept
    if isinstance(node, list):
        shown, indexes = [], []
        for index, value in enumerate(node):
            where = (*at, str(index))
            if max(rules.item_rank(value), rules.section_rank(where)) > clearance:
                out.hidden.append(where)
                continue
            indexes.append(index)
            shown.append(_view(value, where, rules, clearance, out))
        out.visible[at] = indexes
        return shown
    return node


def to_stored(segments: Segments, seen: View) -> Segments:
    """A content path the caller wrote against its view, as a path in the stored
    content: each array index of the view becomes the stored index of that element (one
    past the view's end, or ``-``, is the stored end)."""
    stored: list[str] = []
    for segment in segments:
        indexes = seen.visible.get(tuple(stored))
        if indexes is not None and pointers.is_digits(segment):
            position = int(segment)
            if segment != str(position) or position > len(indexes):
                raise ValueError(f"no element {segment} in the view")  # nor a stored probe
            # one past the last element the caller can see: the stored end
            segment = str(indexes[position]) if position < len(indexes) else "-"
        stored.append(segment)
    return tuple(stored)


def to_view(segments: Segments, seen: View) -> Segments | None:
    """A stored content path as the caller addresses it in its view (each stored array
    index becomes the element's place in the view; an index one past the stored end, the
    view's end); None for a path into content the view leaves out."""
    hidden = set(seen.hidden)
    shown: list[str] = []
    stored: list[str] = []
    for segment in segments:
        stored.append(segment)
        if tuple(stored) in hidden:
            return None
        indexes = seen.visible.get(tuple(stored[:-1]))
        if indexes is not None and pointers.is_digits(segment):
            position = int(segment)
            # an element the caller sees, or one past the stored end: the view's end
            found = indexes.index(position) if position in indexes else len(indexes)
            segment = str(found)
        shown.append(segment)
    return tuple(shown)


def write_violations(
    before: Any,
    after: Any,
    rules: SensitivityRules,
    clearance: int,
    write_up: tuple[Segments, ...] = (),
) -> list[tuple[str, str]]:
    """``(code, message)`` for a write that changes or removes what the caller cannot
    see, or leaves something above its clearance that was not there before — except in
    a ``write_up`` section (a pending section: anyone may propose what only a reviewer
    with the clearance will see)."""
    hidden_before = _above(before, rules, clearance)
    hidden_after = _above(after, rules, clearance)
    found = []
    if hidden_before - hidden_after:
        found.append(("CLEARANCE_EXCEEDED", "the write changes content the caller cannot see"))
    added = hidden_after - hidden_before
    allowed = {key for key in added if _under(key, write_up)}
    if set(added) - allowed:
        found.append(("CLEARANCE_EXCEEDED", "the write adds content above the caller's clearance"))
    return found


def _under(key: bytes, sections: tuple[Segments, ...]) -> bool:
    where = tuple(json.loads(key)[0])
    return any(
        where[: len(s)] == tuple(x for x in s if not pointers.is_digits(x)) for s in sections
    )


def _above(content: Any, rules: SensitivityRules, clearance: int) -> Counter[bytes]:
    """What is above ``clearance`` in ``content``, as a multiset of (where, value), where
    being the path without its array indexes: a hidden item whose index moves because
    the caller inserted or removed a visible one before it is not a change of it."""
    seen = view(content, rules, clearance)
    found: Counter[bytes] = Counter()
    for at in seen.hidden:
        where = [s for s in at if not pointers.is_digits(s)]
        found[canonical([where, pointers.resolve(content, at)])] += 1
    return found
