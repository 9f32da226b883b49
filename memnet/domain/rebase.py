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

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from memnet.domain import pointers
from memnet.domain.audit_records import AuditRecord
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
    ops: list[Op],
    changes: Iterable[AuditRecord],
    latest: Any,
    initial_content: Any = None,
) -> RebaseConflict | None:
    """The first reason ``ops`` cannot be moved past ``changes`` (audit records made
    since the patch's base, any order) onto ``latest`` (the document now), or None when
    they commute. ``.../-`` is an append only where ``latest`` has an array (in an
    object, ``-`` is a member name). A create record counts by its ops alone when its
    base content is ``initial_content`` (a patch for a document that did not exist yet
    was written against that content too)."""
    touches: list[Touch] = []
    for change in changes:
        whole = _sets_whole_document(change, initial_content)
        if whole is not None:
            return whole
        touches.extend(_touches(change, latest))
    for op in ops:
        for touch in touches:
            found = _clash(op, touch, latest)
            if found is not None:
                return RebaseConflict(touch.change_id, op.path, found)
        found_new = _past_the_base(op, touches, latest)
        if found_new is not None:
            return found_new
    return None


def _past_the_base(op: Op, touches: list[Touch], latest: Any) -> RebaseConflict | None:
    """An op that addresses an item by an index the array did not have at the base: the
    index only exists (or, for an ``add``, only means "at the end") because of an append
    made since. The base length is the length now minus those appends."""
    appends: dict[Segments, list[str]] = {}
    for touch in touches:
        if touch.kind == "append":
            appends.setdefault(touch.segments, []).append(touch.change_id)
    for array, change_ids in appends.items():
        for segments in _paths(op):
            index = segments[len(array) : len(array) + 1]
            if segments[: len(array)] != array or not _is_index(index):
                continue
            now = _at(latest, array)
            base_length = len(now) - len(change_ids) if isinstance(now, list) else 0
            if int(index[0]) >= base_length:
                reason = "the index addresses an item appended since"
                return RebaseConflict(change_ids[-1], op.path, reason)
    return None


def _sets_whole_document(change: AuditRecord, initial_content: Any) -> RebaseConflict | None:
    base = change.base
    if base is None:
        return None
    if change.operation == "create" and base.get("content") == initial_content:
        return None
    return RebaseConflict(change.change_id, "/content", "the document was replaced")


def _appends(segments: Segments, latest: Any) -> bool:
    """Whether ``segments`` ends in ``-`` on an array (an append), not an object member."""
    return segments[-1:] == (APPEND,) and isinstance(_at(latest, segments[:-1]), list)


def _at(document: Any, segments: Segments) -> Any:
    try:
        return pointers.resolve(document, segments)
    except KeyError:
        return None


def _touches(change: AuditRecord, latest: Any) -> Iterable[Touch]:
    change_id = change.change_id
    for raw in change.ops:
        name = raw.get("op")
        if name == "test":
            continue
        path = pointers.parse(raw["path"])
        if name in _ADDS and _appends(path, latest):
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


def _clash(op: Op, touch: Touch, latest: Any) -> str | None:
    for segments in _paths(op):
        appending = segments is op.segments and op.op in _ADDS and _appends(segments, latest)
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
    return bool(last) and pointers.is_digits(last[0])
