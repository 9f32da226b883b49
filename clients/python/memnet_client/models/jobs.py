"""Results of the asynchronous work the server queues: a snapshot's replay and a
forget job."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memnet_client.models.fields import JsonObject, items, text


@dataclass(frozen=True)
class Replay:
    """The status of a snapshot's replay (docs/replay.md): ``queued``, ``running``,
    ``applied``, ``partially_applied``, ``unresolved`` or ``failed``."""

    replay_id: str
    status: str
    status_url: str | None
    unresolved: tuple[JsonObject, ...]
    error: Any
    replayed: bool
    raw: JsonObject = field(repr=False)

    @classmethod
    def from_json(cls, data: JsonObject, *, replayed: bool = False) -> Replay:
        return cls(
            replay_id=str(data.get("replay_id")),
            status=str(data.get("status")),
            status_url=text(data, "status_url"),
            unresolved=items(data, "unresolved"),
            error=data.get("error"),
            replayed=replayed,
            raw=data,
        )


@dataclass(frozen=True)
class Job:
    """A forget job (a user's or a conversation's): ``running`` until ``done``, when
    ``receipt_id`` names its deletion receipt."""

    forget_id: str
    status: str
    status_url: str | None
    receipt_id: str | None
    raw: JsonObject = field(repr=False)

    @classmethod
    def from_json(cls, data: JsonObject) -> Job:
        return cls(
            forget_id=str(data.get("forget_id")),
            status=str(data.get("status")),
            status_url=text(data, "status_url"),
            receipt_id=text(data, "receipt_id"),
            raw=data,
        )
