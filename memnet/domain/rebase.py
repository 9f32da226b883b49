"""Rebase (spec 14): whether a patch written against an older version of a document can
be applied to the latest one unchanged, given the changes made since. Pure: no I/O.

A patch commutes with the changes since its base when none of its ops could read or
write what those changes did:

- an append (``add`` at ``.../-``) commutes with anything but a write to the array
  itself or to one of its ancestors (other appends, and changes to items, are fine);
- any other op commutes with a change when neither path is within the other, and the
  change did not insert into, remove from or move within an array that the op
  addresses by index (that shifts the indices);
- nothing commutes with a change that set the whole document (a replace; a create
  other than the binding's initial content).

``test`` ops follow the same rule, so a ``test`` of something a change touched is a
conflict; one that passes the rule is checked again when the ops are applied to the
latest version. The result names the first conflict, for the 412 and the audit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from memnet.domain import pointers
from memnet.domain.patching import Op
from memnet.domain.pointers import Segments

APPEND = "-"
_ADDS = frozenset({"add", "copy", "move"})  # ops that may write at ``/-``


@dataclass(frozen=True)
class Touch:
    """One path an intervening change wrote: ``kind`` is ``append`` (add at ``/-``),
    ``shift`` (an insert, removal or move that renumbers an array) or ``write``."""

    change_id: str
    kind: str
    segments: Segments  # for an append or a shift: the array's path


@dataclass(frozen=True)
class RebaseConflict:
    change_id: str
    path: str
    reason: str

    def as_json(self) -> dict[str, str]:
        return {"change_id": self.change_id, "path": self.path, "reason": self.reason}


def conflict(
    ops: list[Op], changes: Iterable[Mapping[str, Any]], initial_content: Any = None
) -> RebaseConflict | None:
    """The first reason ``ops`` cannot be moved past ``changes`` (audit records made
    since the patch's base, any order), or None when they commute. A create record
    counts by its ops alone when its base content is ``initial_content`` (a patch for
    a document that did not exist yet was written against that content too)."""
    touches: list[Touch] = []
    for change in changes:
        whole = _sets_whole_document(change, initial_content)
        if whole is not None:
            return whole
        touches.extend(_touches(change))
    for op in ops:
        for touch in touches:
            found = _clash(op, touch)
            if found is not None:
                return RebaseConflict(touch.change_id, op.path, found)
    return None


def _sets_whole_document(change: Mapping[str, Any], initial_content: Any) -> RebaseConflict | None:
    base = change.get("base")
    if base is None:
        return None
    if change.get("operation") == "create" and base.get("content") == initial_content:
        return None
    return RebaseConflict(change["change_id"], "/content", "the document was replaced")


def _touches(change: Mapping[str, Any]) -> Iterable[Touch]:
    change_id = change["change_id"]
    for raw in change.get("ops", []):
        name = raw.get("op")
        if name == "test":
            continue
        path = pointers.parse(raw["path"])
        if name in _ADDS and path[-1:] == (APPEND,):
            yield Touch(change_id, "append", path[:-1])
        else:
            yield Touch(change_id, "write", path)
            if name != "replace" and _is_index(path[-1:]):  # an insert or a removal
                yield Touch(change_id, "shift", path[:-1])
        if name == "move":
            source = pointers.parse(raw["from"])
            yield Touch(change_id, "write", source)
            if _is_index(source[-1:]):
                yield Touch(change_id, "shift", source[:-1])


def _clash(op: Op, touch: Touch) -> str | None:
    for segments in _paths(op):
        appending = segments is op.segments and op.op in _ADDS and segments[-1:] == (APPEND,)
        if appending:
            array = segments[:-1]
            if touch.kind == "write" and pointers.is_within(array, touch.segments):
                return "a change since wrote the array or an ancestor of it"
            continue
        if touch.kind == "append":
            if pointers.is_within(touch.segments, segments):
                return "a change since appended inside what this op writes"
            continue
        if touch.kind == "shift":
            inside = segments[: len(touch.segments) + 1]
            if len(inside) > len(touch.segments) and inside[:-1] == touch.segments:
                return "a change since renumbered the array this op indexes"
            if pointers.is_within(touch.segments, segments):
                return "a change since changed inside what this op writes"
            continue
        if pointers.is_within(segments, touch.segments) or pointers.is_within(
            touch.segments, segments
        ):
            return "a change since wrote this path"
    return None


def _paths(op: Op) -> list[Segments]:
    source = [op.from_segments] if op.from_segments is not None else []
    return [op.segments, *source]


def _is_index(last: Segments) -> bool:
    return bool(last) and last[0].isdigit()
