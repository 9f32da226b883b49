"""The answer to ``why``: the changes that produced the value now at a path of a
document's content, newest first (the last is where it came from, unless ``truncated``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memnet_client.models.fields import JsonObject, items, text


@dataclass(frozen=True)
class WhyChange:
    """One change that produced the value: ``role`` is ``origin`` (it wrote the value),
    ``modified`` (it wrote inside it), ``upserted`` (it wrote the same item again),
    ``moved`` or ``copied``. ``evidence`` and ``origin`` (a replay's ``replay_id`` and
    ``extractor``) are ``None`` when absent: on a shared document only admins see them."""

    change_id: str
    role: str
    path: str | None
    actor: str | None
    timestamp: str | None
    reason: str | None
    confidence: float | None
    evidence: Any
    origin: JsonObject | None
    ops: tuple[JsonObject, ...]
    raw: JsonObject = field(repr=False)

    @classmethod
    def from_json(cls, data: JsonObject) -> WhyChange:
        confidence, origin = data.get("confidence"), data.get("origin")
        return cls(
            change_id=str(data["change_id"]),
            role=str(data.get("role")),
            path=text(data, "path"),
            actor=text(data, "actor"),
            timestamp=text(data, "timestamp"),
            reason=text(data, "reason"),
            confidence=float(confidence) if isinstance(confidence, (int, float)) else None,
            evidence=data.get("evidence"),
            origin=origin if isinstance(origin, dict) else None,
            ops=items(data, "ops"),
            raw=data,
        )


@dataclass(frozen=True)
class Why:
    """The value at ``path`` in the version ``change_id`` and the ``changes`` that
    produced it; ``truncated_by`` names why its origin is not among them
    (``HISTORY_TRUNCATED``, ``HISTORY_FORGOTTEN`` or ``WALK_LIMIT``); after
    ``WALK_LIMIT``, ``more_as_of`` and ``more_path`` are where to ask next."""

    path: str | None
    change_id: str | None
    value: Any
    changes: tuple[WhyChange, ...]
    truncated: bool
    truncated_by: str | None
    more_as_of: str | None
    more_path: str | None
    raw: JsonObject = field(repr=False)

    @classmethod
    def from_json(cls, data: JsonObject) -> Why:
        more = data.get("more")
        more = more if isinstance(more, dict) else {}
        return cls(
            path=text(data, "path"),
            change_id=text(data, "change_id"),
            value=data.get("value"),
            changes=tuple(WhyChange.from_json(c) for c in items(data, "changes")),
            truncated=data.get("truncated") is True,
            truncated_by=text(data, "truncated_by"),
            more_as_of=text(more, "as_of"),
            more_path=text(more, "path"),
            raw=data,
        )
