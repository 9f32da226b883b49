"""Results about events: the stored digest, a write's answer, and search hits."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import overload

from memnet_client.models.fields import JsonObject, items, text


@dataclass(frozen=True)
class Event:
    """A stored event digest (spec 9.2)."""

    event_id: str
    timestamp: str
    digest: str
    source_type: str | None
    service_id: str | None
    recorded_by: str | None
    keywords: tuple[str, ...]
    project_ids: tuple[str, ...]
    importance: float | None  # 0-1, what a ranking blend weighs; None: not given
    raw: JsonObject = field(repr=False)

    @classmethod
    def from_json(cls, data: JsonObject) -> Event:
        importance = data.get("importance")
        return cls(
            event_id=str(data["event_id"]),
            timestamp=str(data.get("timestamp")),
            digest=str(data.get("digest")),
            source_type=text(data, "source_type"),
            service_id=text(data, "service_id"),
            recorded_by=text(data, "recorded_by"),
            keywords=items(data, "keywords"),
            project_ids=items(data, "project_ids"),
            importance=float(importance) if isinstance(importance, int | float) else None,
            raw=data,
        )


@dataclass(frozen=True)
class EventWrite:
    """``indexed: False``: stored, and queued for the index (search finds it shortly)."""

    event: Event
    indexed: bool
    replayed: bool
    raw: JsonObject = field(repr=False)

    @classmethod
    def from_json(cls, data: JsonObject, *, replayed: bool) -> EventWrite:
        event = data.get("event", data)
        return cls(Event.from_json(event), data.get("indexed") is not False, replayed, data)


@dataclass(frozen=True)
class SearchHit:
    event: Event
    score: float
    pointers: JsonObject
    ranking: JsonObject | None = None  # with a ranking blend: relevance, importance, recency

    @classmethod
    def from_json(cls, data: JsonObject) -> SearchHit:
        pointers, ranking = data.get("pointers"), data.get("ranking")
        return cls(
            Event.from_json(data["event"]),
            float(data.get("score") or 0.0),
            pointers if isinstance(pointers, Mapping) else {},
            ranking if isinstance(ranking, Mapping) else None,
        )


@dataclass(frozen=True)
class SearchResults(Sequence[SearchHit]):
    """The hits, best first; a sequence, so ``for hit in results`` reads naturally."""

    hits: tuple[SearchHit, ...]
    raw: JsonObject = field(repr=False)

    @classmethod
    def from_json(cls, data: JsonObject) -> SearchResults:
        return cls(tuple(SearchHit.from_json(h) for h in items(data, "results")), data)

    def __len__(self) -> int:
        return len(self.hits)

    @overload
    def __getitem__(self, index: int) -> SearchHit: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[SearchHit, ...]: ...

    def __getitem__(self, index: int | slice) -> SearchHit | tuple[SearchHit, ...]:
        return self.hits[index]
