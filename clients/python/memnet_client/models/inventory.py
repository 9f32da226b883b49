"""What a user has, a page at a time (``GET …/events``, ``GET …/snapshots``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from memnet_client.models.events import Event
from memnet_client.models.fields import JsonObject, items, text


@dataclass(frozen=True)
class EventList:
    """One page of events in event id order; pass ``after`` for the next (``None``: no
    more). A page may hold fewer events than asked (those the caller may not see are
    left out) and still continue."""

    events: tuple[Event, ...]
    after: str | None
    raw: JsonObject = field(repr=False)

    @classmethod
    def from_json(cls, data: JsonObject) -> EventList:
        events = tuple(Event.from_json(e) for e in items(data, "events"))
        return cls(events=events, after=text(data, "after"), raw=data)


@dataclass(frozen=True)
class ListedSnapshot:
    """A stored snapshot: its ids, when it was stored, its stored size, its replay's id
    and status (``None``: no replay record yet). Never its content."""

    conversation_id: str
    snapshot_id: str
    stored_at: str | None
    size: int | None
    replay_id: str | None
    replay_status: str | None

    @classmethod
    def from_json(cls, data: JsonObject) -> ListedSnapshot:
        size = data.get("size")
        return cls(
            conversation_id=text(data, "conversation_id") or "",
            snapshot_id=text(data, "snapshot_id") or "",
            stored_at=text(data, "stored_at"),
            size=size if isinstance(size, int) else None,
            replay_id=text(data, "replay_id"),
            replay_status=text(data, "replay_status"),
        )


@dataclass(frozen=True)
class SnapshotList:
    snapshots: tuple[ListedSnapshot, ...]
    after: str | None
    raw: JsonObject = field(repr=False)

    @classmethod
    def from_json(cls, data: JsonObject) -> SnapshotList:
        found = tuple(ListedSnapshot.from_json(s) for s in items(data, "snapshots"))
        return cls(snapshots=found, after=text(data, "after"), raw=data)
