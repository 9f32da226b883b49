"""Why a value is in a document (issue 27, item 4; docs/decisions.md "Why a value is
there"): the committed changes that produced the value now at a JSON Pointer.

The changes are walked newest first and the pointer is carried back through each
change's ops, last op first, as the audit record stores them (after planning, so they
are exactly what the fold applies): an ``add`` before the value's index in the same
array means the value sat one index lower before it, a ``remove`` one higher, a
``move`` or ``copy`` of a value holding it means it came from the ``from`` location.
So an item now at ``/durable_facts/3`` that was added at ``/durable_facts/2`` and
shifted by a later insertion is still traced to the change that added it.

What a change did to the value is its **role**:

- ``origin``: it wrote the whole value (an ``add`` or a ``replace`` at the value or
  above it, or a create or a ``PUT`` whose content held it: no op then). The walk ends.
- ``modified``: an op of it wrote inside the value.
- ``upserted``: an append that matched the item by identity (the binding's
  ``item_identity``; the record's ``upserts`` say ``replaced`` or ``unchanged``) wrote
  the item again in place. The item is the same one, so the walk goes on to the change
  that first added it.
- ``moved`` / ``copied``: the value came from another location, where the walk goes on.

Array lengths are needed to place an append (``/-``); they are carried back from the
current document (an op at a child of an array changes its length by one). Only after
a ``move`` or ``copy`` are the containers above the source unknown; then ``before``
gives the document as it was before a change (a version), read only if needed. Pure:
the caller reads the records and the versions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from memnet.domain import pointers
from memnet.domain.audit_records import AuditRecord
from memnet.domain.envelope import Json
from memnet.domain.patching import Op, apply_ops, parse_ops
from memnet.domain.pointers import Segments

ORIGIN, MODIFIED, UPSERTED, MOVED, COPIED = "origin", "modified", "upserted", "moved", "copied"
ROLES = (MODIFIED, UPSERTED, MOVED, COPIED, ORIGIN)  # a change with several: the last of them
_OBJECT = -1  # the kind of a container that is an object (an array's is its length)
_UPSERTED = frozenset({"replaced", "unchanged"})

Before = Callable[[AuditRecord], Json | None]
"""The document before a change (None: not readable any more, past the audit horizon)."""


@dataclass(frozen=True)
class Touch:
    """What one change did to the value: its ``role``, the ``path`` the value had just
    after the change, and the indexes of its ``ops`` that touched the value."""

    record: AuditRecord
    role: str
    path: Segments
    ops: tuple[int, ...]


@dataclass(frozen=True)
class Attribution:
    """The changes that touched the value, newest first; ``found`` when the last of them
    is its origin; ``walked``: how many changes were read; ``path``: where the value
    was before the oldest of them (where a walk that stopped short would go on)."""

    touches: tuple[Touch, ...]
    found: bool
    walked: int
    path: Segments


def canonical_path(document: Any, segments: Segments) -> Segments | None:
    """``segments`` with each array index written as the fold writes it (``01`` is
    ``1``), or None when nothing is there in ``document``."""
    found: list[str] = []
    node = document
    for segment in segments:
        if isinstance(node, list) and pointers.is_digits(segment) and int(segment) < len(node):
            found.append(str(int(segment)))
            node = node[int(segment)]
        elif isinstance(node, dict) and segment in node:
            found.append(segment)
            node = node[segment]
        else:
            return None
    return tuple(found)


def attribute(
    document: Json, path: Segments, records: Iterable[AuditRecord], before: Before
) -> Attribution:
    """Which of ``records`` (the changes that led to ``document``, newest first) produced
    the value at ``path`` (from the document's root, canonical: see
    :func:`canonical_path`). Stops reading ``records`` at the origin."""
    tracker = _Tracker(list(path), _kinds(document, path))
    touches: list[Touch] = []
    walked = 0
    for record in records:
        walked += 1
        touch = tracker.back_through(record, before)
        if touch is not None:
            touches.append(touch)
        if tracker.found or tracker.lost:
            break
    return Attribution(tuple(touches), tracker.found, walked, tuple(tracker.path))


def _kinds(document: Any, path: Segments) -> list[int | None]:
    """The kind of each container on ``path``: an array's length, or :data:`_OBJECT`."""
    kinds: list[int | None] = []
    node = document
    for segment in path:
        kinds.append(len(node) if isinstance(node, list) else _OBJECT)
        node = node[int(segment)] if isinstance(node, list) else node[segment]
    return kinds


class _Tracker:
    """The value's path in the state being walked back, the kinds of its containers there
    (None: unknown), and what the change being undone did to it."""

    def __init__(self, path: list[str], kinds: list[int | None]) -> None:
        self.path, self.kinds = path, kinds
        self.found = self.lost = False
        self._role: str | None = None
        self._touched: list[int] = []
        self._states: tuple[AuditRecord, Any, list[Op], Before] | None = None

    def back_through(self, record: AuditRecord, before: Before) -> Touch | None:
        after = tuple(self.path)
        self._role, self._touched = None, []
        ops = parse_ops(record.ops)
        self._states = (record, None, ops, before)
        upserted = {
            (u.get("op_index"), u.get("path"))
            for u in record.upserts or []
            if u.get("result") in _UPSERTED
        }
        for op in reversed(ops):
            self._undo(op, upserted)
            if self.found or self.lost:
                break
        if not self.found and not self.lost and record.base is not None:
            if canonical_path(record.base, tuple(self.path)) is None:
                self.lost = True  # the records do not fold to this document: nothing to say
            else:
                self._note(ORIGIN, None)  # it was in the content the change started from
        self._states = None
        if self._role is None:
            return None
        return Touch(record, self._role, after, tuple(sorted(self._touched)))

    # -- one op, undone --------------------------------------------------------------

    def _undo(self, op: Op, upserted: set[Any]) -> None:
        if op.op == "test":
            return
        if op.op in ("move", "copy"):
            assert op.from_segments is not None  # parse_ops: move and copy have a from
            target = self._appended(op)
            if target is not None and _covers(target, self.path):
                self._relocate(target, op.from_segments)
                self._note(MOVED if op.op == "move" else COPIED, op.index)
                return
            self._undo_add(op)
            if op.op == "move" and not self.lost:
                self._undo_remove(op, op.from_segments)
        elif op.op == "add":
            self._undo_add(op)
        elif op.op == "remove":
            self._undo_remove(op, op.segments)
        elif _inside(op.segments, self.path):
            self._note(MODIFIED, op.index)
        elif _covers(op.segments, self.path):  # a replace of the value or above it
            self._note(UPSERTED if (op.index, op.path) in upserted else ORIGIN, op.index)

    def _undo_add(self, op: Op) -> None:
        """Before an add at ``op.segments`` (a move's or copy's too): the value was
        added by it, or sat one index lower, or elsewhere it did not matter."""
        target = op.segments
        depth = self._beside(op, target)
        if depth is None:
            return
        kind = self._kind(depth, op, after=True)
        if kind is None:
            return
        if kind == _OBJECT:
            if target[-1] == self.path[depth]:
                self._note(ORIGIN, op.index)
            return
        where = kind - 1 if target[-1] == "-" else int(target[-1])
        mine = int(self.path[depth])
        if where == mine:
            self._note(ORIGIN, op.index)
            return
        if where < mine:
            self.path[depth] = str(mine - 1)
        self.kinds[depth] = kind - 1

    def _beside(self, op: Op, target: Segments) -> int | None:
        """The depth of ``target``'s container when it is one the value's path goes
        through (an add or remove there may shift the value); None otherwise, noting
        ``op`` as modifying the value when ``target`` is inside it."""
        if _inside(target, self.path):
            self._note(MODIFIED, op.index)
            return None
        return len(target) - 1 if _in_container(target, self.path) else None

    def _appended(self, op: Op) -> Segments | None:
        """``op.segments`` with an append (``-``) to a container of the value's path
        written as the index it added (None: that container's kind is not known)."""
        target = op.segments
        if target[-1] != "-" or not _in_container(target, self.path):
            return target
        kind = self._kind(len(target) - 1, op, after=True)
        if kind is None or kind == _OBJECT:  # an object's member may be named "-"
            return None if kind is None else target
        return (*target[:-1], str(kind - 1))

    def _undo_remove(self, op: Op, target: Segments) -> None:
        """Before a removal at ``target`` (a move's source too): the value sat one index
        higher, or the removal was inside it."""
        depth = self._beside(op, target)
        if depth is None:
            return
        known = self.kinds[depth]
        kind = known + 1 if known is not None and known != _OBJECT else known
        if kind is None:
            kind = self._kind(depth, op, after=False)
            if kind is None:
                return
        if kind == _OBJECT:
            return
        if int(target[-1]) <= int(self.path[depth]):
            self.path[depth] = str(int(self.path[depth]) + 1)
        self.kinds[depth] = kind

    def _relocate(self, target: Segments, source: Segments) -> None:
        """The value came from ``source``: the containers inside it are the same ones,
        those above ``source`` are not known."""
        rest = len(target)
        self.path = [*source, *self.path[rest:]]
        self.kinds = [*([None] * len(source)), *self.kinds[rest:]]

    def _note(self, role: str, index: int | None) -> None:
        if index is not None:
            self._touched.append(index)
        if self._role is None or ROLES.index(role) > ROLES.index(self._role):
            self._role = role
        self.found = self.found or role == ORIGIN

    # -- a container's kind when it is not known ---------------------------------------

    def _kind(self, depth: int, op: Op, after: bool) -> int | None:
        """The kind of the container at ``depth`` of the path, after ``op`` (or before
        it): the one carried back, else read from the version before the change with
        its ops up to this one applied. None (and the walk ends) if that version is gone."""
        if after and self.kinds[depth] is not None:
            return self.kinds[depth]
        assert self._states is not None
        record, start, ops, before = self._states
        if start is None:
            start = _start_of(record, before)
            if start is None:
                self.lost = True
                return None
            self._states = (record, start, ops, before)
        state = apply_ops(start, ops[: op.index + 1 if after else op.index])
        try:
            node = pointers.resolve(state, tuple(self.path[:depth]))
        except KeyError:  # the records do not fold to this document: nothing to say
            self.lost = True
            return None
        return len(node) if isinstance(node, list) else _OBJECT


def _start_of(record: AuditRecord, before: Before) -> Any:
    """What ``record``'s ops apply to (only ``content`` is ever read)."""
    if record.base is not None:
        return dict(record.base)
    return before(record)


def _inside(target: Segments, path: list[str]) -> bool:
    """``target`` is strictly below the value at ``path``."""
    return len(target) > len(path) and list(target[: len(path)]) == path


def _covers(target: Segments, path: list[str]) -> bool:
    """``target`` is the value at ``path`` or above it."""
    return len(target) <= len(path) and list(target) == path[: len(target)]


def _in_container(target: Segments, path: list[str]) -> bool:
    """``target``'s parent is a container the value's path goes through."""
    return len(target) - 1 < len(path) and list(target[:-1]) == path[: len(target) - 1]
