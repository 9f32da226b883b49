"""Where an item came from, as the poisoning guard leaves it (docs/security.md): which
items a replay wrote and no person has reviewed, and the pending sections as context
shows them. Pure: no I/O; no section is named here.
"""

from __future__ import annotations

import copy
from typing import Any

from memnet.domain import pointers
from memnet.domain.pointers import Segments

MODES = ("omit", "mark")


def is_unreviewed_replay(item: Any) -> bool:
    """Whether ``item`` was learned by a replay (its evidence names a snapshot, as the
    replay stamps it) and no person has reviewed it since (no ``reviewed_at``)."""
    if not isinstance(item, dict):
        return False
    evidence = item.get("evidence")
    pieces = [
        p for p in (evidence if isinstance(evidence, list) else [evidence]) if isinstance(p, dict)
    ]
    replayed = any("snapshot_uri" in p for p in pieces)
    return replayed and not any("reviewed_at" in p for p in pieces)


def reviewed(value: Any, reviewer: str, moment: str) -> Any:
    """``value`` as a review writes it: an object's ``evidence`` object (or each object
    of an evidence list) with ``reviewed_by`` and ``reviewed_at`` added; anything else
    as it is. A copy: the stored proposal is not changed."""
    if not isinstance(value, dict) or "evidence" not in value:
        return value
    stamp = {"reviewed_by": reviewer, "reviewed_at": moment}
    evidence = value["evidence"]
    if isinstance(evidence, dict):
        return {**value, "evidence": {**evidence, **stamp}}
    if isinstance(evidence, list):
        pieces = [{**p, **stamp} if isinstance(p, dict) else p for p in evidence]
        return {**value, "evidence": pieces}
    return value


def pending_shown(content: Any, pending: Segments, mode: str) -> tuple[Any, int]:
    """``content`` as context shows its pending section, and how many items it holds:
    left out (``omit``), or each item marked ``"unverified": true`` (``mark``)."""
    try:
        items = pointers.resolve(content, pending)
    except KeyError:
        return content, 0
    count = len(items) if isinstance(items, list) else 0
    if not count:
        return content, 0
    shown = copy.copy(content)
    parent: Any = shown
    for segment in pending[:-1]:
        parent[segment] = copy.copy(parent[segment])
        parent = parent[segment]
    if mode == "omit":
        del parent[pending[-1]]
    else:
        parent[pending[-1]] = [
            {"unverified": True, **item} if isinstance(item, dict) else item for item in items
        ]
    return shown, count
