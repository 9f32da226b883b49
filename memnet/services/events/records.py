"""Event records (spec 9.2, 10.5): where an event's blob lives, the record it holds,
the index entry derived from it, and what index jobs report. Shared by
:mod:`memnet.services.search.index` (the worker), :mod:`.service` (the API side),
compaction and promotion."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields

from memnet.domain.envelope import Json
from memnet.domain.event_model import label
from memnet.domain.layout import user_prefix
from memnet.ports import BlobNotFound, BlobStore, IndexedEvent


@dataclass(frozen=True)
class EventClass:
    """An event's sensitivity class: a class of a profile (:mod:`.classes`)."""

    profile_id: str
    name: str

    @classmethod
    def of(cls, stored: Json | None) -> EventClass | None:
        return None if stored is None else cls(stored["profile_id"], stored["class"])

    def as_json(self) -> dict[str, str]:
        return {"profile_id": self.profile_id, "class": self.name}

    @property
    def label(self) -> str:
        """As the search index holds and filters it (:func:`memnet.domain.event_model.label`)."""
        return label(self.profile_id, self.name)


@dataclass(frozen=True)
class EventRecord:
    """One event digest as stored (:func:`memnet.domain.event_model.parse_event` checks
    it) and answered; :meth:`as_json` is that one form. ``importance`` and
    ``sensitivity`` are left out when None (events written before them have neither);
    ``recorded_by`` is None only as the index reads a blob
    (:func:`~memnet.domain.event_model.parse_stored`)."""

    event_id: str
    tenant_id: str
    user_id: str
    service_id: str
    timestamp: str
    source_type: str
    digest: str
    keywords: tuple[str, ...] = ()
    project_ids: tuple[str, ...] = ()
    snapshot_uri: str | None = None
    evidence: Json | None = None
    importance: float | None = None
    sensitivity: EventClass | None = None
    recorded_by: str | None = None

    @classmethod
    def from_json(cls, stored: Json) -> EventRecord:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in stored.items() if k in known}
        values.update(
            keywords=tuple(stored.get("keywords") or ()),
            project_ids=tuple(stored.get("project_ids") or ()),
            sensitivity=EventClass.of(stored.get("sensitivity")),
        )
        return cls(**values)

    def as_json(self) -> Json:
        found = {f.name: getattr(self, f.name) for f in fields(self)}
        named = self.sensitivity
        found.update(
            keywords=list(self.keywords),
            project_ids=list(self.project_ids),
            sensitivity=None if named is None else named.as_json(),
        )
        return {k: v for k, v in found.items() if v is not None or k not in _UNSAID}

    @property
    def name(self) -> str:
        """The event's blob."""
        return event_name(self.tenant_id, self.user_id, self.event_id)

    def shown(self, classes: tuple[str, ...] | None) -> bool:
        """Whether an asker that may see ``classes`` (None: every class) may see it."""
        return self.sensitivity is None or classes is None or self.sensitivity.label in classes

    def indexed(self) -> IndexedEvent:
        """Its entry in the search index."""
        evidence = self.evidence
        return IndexedEvent(
            tenant_id=self.tenant_id,
            user_id=self.user_id,
            event_id=self.event_id,
            timestamp=self.timestamp,
            service_id=self.service_id,
            source_type=self.source_type,
            digest=self.digest,
            keywords=self.keywords,
            project_ids=self.project_ids,
            snapshot_uri=self.snapshot_uri,
            evidence=None if evidence is None else json.dumps(evidence, separators=(",", ":")),
            sensitivity=None if self.sensitivity is None else self.sensitivity.label,
        )


_UNSAID = frozenset({"importance", "sensitivity", "recorded_by"})  # None: left out


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

    def as_json(self) -> Json:
        """JSON-ready: ``skipped`` is the count, ``skipped_events`` lists them."""
        fields = asdict(self)
        return {**fields, "skipped": len(self.skipped), "skipped_events": fields["skipped"]}


def event_name(tenant_id: str, user_id: str, event_id: str) -> str:
    return f"{user_prefix(tenant_id, user_id)}events/{event_id}.json"


def load_event(blobs: BlobStore, tenant_id: str, user_id: str, event_id: str) -> EventRecord | None:
    """The stored record, or None if there is no such event blob."""
    try:
        data = blobs.read(event_name(tenant_id, user_id, event_id)).data
    except BlobNotFound:
        return None
    return EventRecord.from_json(json.loads(data))
