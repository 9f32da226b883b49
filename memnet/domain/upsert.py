"""Upsert with dedupe (issue 15, capability 3; docs/profiles.md "Item identity").

A binding's ``item_identity`` gives the items of an array section an identity: the value
of a key member (``{"key": "fact_id"}``) or a hash of their normalised content
(``{"content_fields": ["content"]}``; ``[]`` for string items). An ``add`` that appends
(``/content/<section>/-``) an item whose identity an item of the section already has
becomes a ``replace`` of that item, so writing the same memory twice keeps one; each
such op is reported as ``added``, ``replaced`` or ``unchanged``. Items without an
identity (no key member, no content) are appended as any ``add`` is. Ops are planned in
order over a scratch copy, so two appends of one identity in one patch leave one item.
Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from memnet.domain import pointers
from memnet.domain.envelope import CONTENT, canonical, char_count
from memnet.domain.errors import Unprocessable
from memnet.domain.patching import Op, apply_in_place, apply_ops
from memnet.domain.pointers import Segments

_SPACE = re.compile(r"\s+")
Hidden = Callable[[Segments, int, Any], bool]  # (section, index, item): the writer cannot see it


@dataclass(frozen=True)
class IdentityRule:
    """How the items of one array section are told apart."""

    key: str | None = None
    content_fields: tuple[str, ...] | None = None

    def identity(self, item: Any) -> str | None:
        """The item's identity, or None when it has none (it is then only appended)."""
        if self.key is not None:
            value = item.get(self.key) if isinstance(item, dict) else None
            return None if value is None else "key:" + canonical(value).decode()
        if not self.content_fields:
            text = normalise(item) if isinstance(item, str) else None
        elif isinstance(item, dict):
            parts = [normalise(item.get(name)) for name in self.content_fields]
            text = None if all(p is None for p in parts) else canonical(parts).decode()
        else:
            text = None
        return None if not text else hashlib.sha256(text.encode()).hexdigest()


def normalise(value: Any) -> str | None:
    """Text as dedupe compares it: NFKC, case-folded, runs of white space as one space,
    trimmed; None for anything that is not a string."""
    if not isinstance(value, str):
        return None
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", value).casefold()).strip()


def parse_rules(raw: Mapping[str, Any]) -> dict[Segments, IdentityRule]:
    """A binding's ``item_identity`` (already meta-schema valid)."""
    return {
        pointers.parse(section): IdentityRule(
            key=rule.get("key"),
            content_fields=None if "key" in rule else tuple(rule.get("content_fields", ())),
        )
        for section, rule in raw.items()
    }


def plan(
    rules: Mapping[Segments, IdentityRule],
    content: Any,
    ops: list[Op],
    max_chars: int,
    hidden: Hidden | None = None,
) -> tuple[list[Op], list[dict[str, Any]]]:
    """``ops`` with each deduplicated append turned into a replace, and what each append
    into an identity section became (``op_index``, ``result``, ``path``). A ``copy`` that
    makes the scratch document larger than ``max_chars`` ends the planning: the real
    apply refuses it, and doubling a document 50 times must not happen here first.

    Each section's identities are computed once (:class:`_Identities`) and kept up to
    date by the appends planned here; another op that writes in or above the section
    makes them computed again at the next append, so a patch costs ops plus items, not
    their product, unless it interleaves other writes to the section with appends.

    ``hidden(section, index, item)``: whether the writer cannot see an item (sensitivity,
    :mod:`memnet.domain.sensitivity`); such an item is never matched, or the answer
    would tell its identity."""
    if not rules or not any(_section_of(rules, op) is not None for op in ops):
        return ops, []
    scratch: Any = apply_ops({CONTENT: content}, [])  # one copy, changed in place below
    known: dict[Segments, _Identities] = {}
    planned: list[Op] = []
    report: list[dict[str, Any]] = []
    for position, op in enumerate(ops):
        section = _section_of(rules, op)
        if section is not None:
            op, outcome = _upsert(rules[section], section, scratch, op, (known, hidden))
            if outcome is not None:
                report.append(outcome)
        else:
            _forget_touched(known, op)
        planned.append(op)
        try:
            scratch = apply_in_place(scratch, op)
        except Unprocessable:  # the real apply reports it; plan nothing further
            return planned + ops[position + 1 :], report
        if op.op == "copy" and char_count(scratch) > max_chars:
            return planned + ops[position + 1 :], report
    return planned, report


class _Identities:
    """A section's item identities: the first index holding each, and the count."""

    def __init__(
        self, rule: IdentityRule, section: Segments, items: list[Any], hidden: Hidden | None
    ) -> None:
        self.first: dict[str, int] = {}
        for index, item in enumerate(items):
            if hidden is not None and hidden(section, index, item):
                continue
            identity = rule.identity(item)
            if identity is not None:
                self.first.setdefault(identity, index)
        self.count = len(items)


def _section_of(rules: Mapping[Segments, IdentityRule], op: Op) -> Segments | None:
    if op.op != "add" or op.segments[:1] != (CONTENT,) or op.segments[-1:] != ("-",):
        return None
    section = op.segments[1:-1]
    return section if section in rules else None


def _forget_touched(known: dict[Segments, _Identities], op: Op) -> None:
    """Drop what ``op`` may change: sections it writes in, above or from."""
    if not op.writes():
        return
    written = [op.segments[1:], *([op.from_segments[1:]] if op.from_segments else [])]
    for section in list(known):
        if any(s[: len(section)] == section or section[: len(s)] == s for s in written):
            del known[section]


def _upsert(
    rule: IdentityRule,
    section: Segments,
    scratch: Any,
    op: Op,
    state: tuple[dict[Segments, _Identities], Hidden | None],
) -> tuple[Op, dict[str, Any] | None]:
    known, hidden = state
    try:
        items = pointers.resolve(scratch, (CONTENT, *section))
    except KeyError:
        return op, None
    identity = rule.identity(op.value)
    if not isinstance(items, list) or identity is None:
        known.pop(section, None)  # a plain append: the count moves
        return op, None
    if section not in known or known[section].count != len(items):
        known[section] = _Identities(rule, section, items, hidden)
    ids = known[section]
    found = ids.first.get(identity)
    if found is None:
        ids.first[identity], ids.count = len(items), len(items) + 1
        path = pointers.render((CONTENT, *section, str(len(items))))
        return op, {"op_index": op.index, "result": "added", "path": path}
    segments = (CONTENT, *section, str(found))
    result = "unchanged" if canonical(items[found]) == canonical(op.value) else "replaced"
    replaced = Op(op.index, "replace", pointers.render(segments), segments, op.value)
    return replaced, {"op_index": op.index, "result": result, "path": replaced.path}
