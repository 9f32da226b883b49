"""The ops a revert writes (issue 27; docs/decisions.md "Revert and undo"). Pure: no I/O.

- :func:`restoring`: the ops that turn one content into another, one per top-level
  section that differs (``replace``, or ``add``/``remove`` for a section only one side
  has). Coarse on purpose: a section is what a profile's writable, denied and durable
  rules name, so each op is checked by the same rules as a caller's PATCH, and the
  count stays within ``max_ops_per_patch`` however much changed inside.
- :func:`inverse`: the ops that turn the document after a change back into the document
  before it, op by op in reverse, each computed against the state that op met (an
  append's inverse removes the index it landed at). Paths are those the change wrote,
  so :func:`memnet.domain.rebase.conflict` can tell whether it still applies after
  later changes.
"""

from __future__ import annotations

from typing import Any

from memnet.domain import pointers
from memnet.domain.envelope import CONTENT, Json, canonical
from memnet.domain.patching import Op, apply_in_place, apply_ops, parse_ops
from memnet.domain.pointers import Segments


def restoring(current: Json, wanted: Json) -> list[Json]:
    """Ops (in document paths, ``/content/...``) turning content ``current`` into
    ``wanted``: one per top-level member that differs."""
    ops: list[Json] = [
        {"op": "remove", "path": _path((CONTENT, name))} for name in current if name not in wanted
    ]
    for name, value in wanted.items():
        if name not in current:
            ops.append({"op": "add", "path": _path((CONTENT, name)), "value": value})
        elif canonical(current[name]) != canonical(value):
            ops.append({"op": "replace", "path": _path((CONTENT, name)), "value": value})
    return ops


def inverse(ops: list[Json], before: Json) -> list[Json]:
    """The ops undoing ``ops`` (as an audit record stores them) applied to ``before``."""
    state = apply_ops(before, [])  # a copy this walk may change in place
    undone: list[Json] = []
    for op in parse_ops(ops):
        for step in _halves(op, state):
            undone[:0] = _step(state, step)
            state = apply_in_place(state, step)
    return undone


def _halves(op: Op, state: Any) -> list[Op]:
    """``op``, or for a ``move`` the removal and the add it is made of."""
    if op.op != "move" or op.from_segments is None:
        return [op]
    value = pointers.resolve(state, op.from_segments)
    return parse_ops(
        [{"op": "remove", "path": op.from_path}, {"op": "add", "path": op.path, "value": value}]
    )


def _step(state: Any, op: Op) -> list[Json]:
    name, segments = op.op, op.segments
    if name in ("add", "copy"):
        return _unadd(state, segments)
    if name == "remove":
        return _unremove(state, segments)
    if name == "replace":
        return [{"op": "replace", "path": _path(segments), "value": _at(state, segments)}]
    return []  # a test changes nothing


def _unadd(state: Any, segments: Segments) -> list[Json]:
    """Undo an ``add`` at ``segments`` that ``state`` is about to meet."""
    parent, last = pointers.resolve(state, segments[:-1]), segments[-1]
    if isinstance(parent, list):
        index = len(parent) if last == "-" else int(last)
        return [{"op": "remove", "path": _path((*segments[:-1], str(index)))}]
    if last in parent:  # an add onto an existing member replaces it
        return [{"op": "replace", "path": _path(segments), "value": _at(state, segments)}]
    return [{"op": "remove", "path": _path(segments)}]


def _unremove(state: Any, segments: Segments) -> list[Json]:
    """Undo a removal at ``segments`` (an add at an index inserts there)."""
    return [{"op": "add", "path": _path(segments), "value": _at(state, segments)}]


def _at(state: Any, segments: Segments) -> Any:
    """A copy of the value at ``segments``: later ops change ``state`` in place."""
    return apply_ops(pointers.resolve(state, segments), [])


def _path(segments: Segments) -> str:
    return pointers.render(segments)
