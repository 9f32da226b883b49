"""Event records as the index side reads them (spec 9.2, 10.5): where an event's blob
lives, the record it holds, the index entry derived from it, and what index jobs report.
Shared by :mod:`memnet.services.search.index` (the worker), :mod:`.service` (the API
side), compaction and promotion."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from memnet.domain.event_model import class_label
from memnet.domain.layout import user_prefix
from memnet.ports import BlobNotFound, BlobStore, IndexedEvent


@dataclass(frozen=True)
class SkippedEvent:
    """An event blob the worker could not index, and why."""

    tenant_id: str
    user_id: str
    event_id: str
    reason: str


@dataclass
class IndexReport:
    """What index jobs did: jobs done, events indexed, index entries removed (blob gone or
    not indexable) and the events skipped."""

    jobs: int = 0
    indexed: int = 0
    removed: int = 0
    embedded: int = 0
    skipped: list[SkippedEvent] = field(default_factory=list)

    def add(self, other: IndexReport) -> None:
        self.jobs += other.jobs
        self.indexed += other.indexed
        self.removed += other.removed
        self.embedded += other.embedded
        self.skipped.extend(other.skipped)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: ``skipped`` is the count, ``skipped_events`` lists them."""
        fields = asdict(self)
        return {**fields, "skipped": len(self.skipped), "skipped_events": fields["skipped"]}


def event_name(tenant_id: str, user_id: str, event_id: str) -> str:
    return f"{user_prefix(tenant_id, user_id)}events/{event_id}.json"


def load_event(
    blobs: BlobStore, tenant_id: str, user_id: str, event_id: str
) -> dict[str, Any] | None:
    """The stored record, or None if there is no such event blob."""
    try:
        record: dict[str, Any] = json.loads(
            blobs.read(event_name(tenant_id, user_id, event_id)).data
        )
    except BlobNotFound:
        return None
    return record


def indexed(record: dict[str, Any]) -> IndexedEvent:
    evidence = record.get("evidence")
    return IndexedEvent(
        tenant_id=record["tenant_id"],
        user_id=record["user_id"],
        event_id=record["event_id"],
        timestamp=record["timestamp"],
        service_id=record["service_id"],
        source_type=record["source_type"],
        digest=record["digest"],
        keywords=tuple(record.get("keywords", ())),
        project_ids=tuple(record.get("project_ids", ())),
        snapshot_uri=record.get("snapshot_uri"),
        evidence=None if evidence is None else json.dumps(evidence, separators=(",", ":")),
        sensitivity=class_label(record),
    )
