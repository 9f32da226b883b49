"""Event digests (spec 9.2, 10.5, 10.6, 20): the blob is the record, the index derived.

Write: check the body and that the caller may act as its ``service_id``, claim the
idempotency key, store the event blob create-only (an identical event already stored is
the same write), then index it; if indexing fails, whatever the reason, the write still
succeeds (``indexed: false``) and an index job goes to the queue. Search asks the index,
then reads each hit's blob (a hit whose blob is gone is skipped and queued for removal).
Index jobs, the queue worker and reindex live in :mod:`memnet.services.search.index`.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from memnet.domain.callers import ANY, Caller
from memnet.domain.envelope import Json
from memnet.domain.errors import Conflict, Forbidden, NotFound
from memnet.domain.event_model import parse_event
from memnet.domain.ranking import Ranking, blend
from memnet.domain.timestamps import parse_timestamp
from memnet.ports import (
    BlobNotFound,
    BlobStore,
    Clock,
    Condition,
    EventHit,
    EventQuery,
    MessageQueue,
    PreconditionFailed,
    SearchIndex,
    StorageError,
)
from memnet.services import telemetry
from memnet.services.documents.idempotency import IdempotencyStore, Replay, Response, Ticket
from memnet.services.events.classes import EventClasses
from memnet.services.events.records import EventClass, EventRecord, IndexReport, load_event
from memnet.services.forget.tombstones import Tombstones
from memnet.services.records import dump
from memnet.services.search.embedder_probe import EmbedderProbe
from memnet.services.search.fusion import fuse
from memnet.services.search.index import INDEX_QUEUE, IndexJobs, Reindexing
from memnet.services.search.vectors import EventVectors

log = logging.getLogger("memnet.services.events.service")


class EventService:
    def __init__(
        self,
        blobs: BlobStore,
        index: SearchIndex,
        queue: MessageQueue,
        idempotency: IdempotencyStore,
        clock: Clock,
        *,
        classes: EventClasses,
        queue_name: str = INDEX_QUEUE,
        tombstones: Tombstones | None = None,
        after_index: Callable[[str, str], None] | None = None,
        promote_delay: float = 30.0,
        vectors: EventVectors | None = None,
        dense_weight: float = 0.7,
    ):
        """``classes``: the events' sensitivity classes (:mod:`.classes`);
        ``vectors``: hybrid retrieval (None: lexical only); ``dense_weight``: the dense
        ranking's share of a fused score (:mod:`memnet.services.search.fusion`)."""
        if not 0.0 <= dense_weight <= 1.0:
            raise ValueError("dense_weight must be within [0, 1]")
        self._blobs, self._index = blobs, index
        self._tombstones = tombstones  # None only for a service built alone in a test
        self._idempotency, self._clock = idempotency, clock
        self._vectors, self._dense_weight = vectors, dense_weight
        self._classes = classes
        self._jobs = IndexJobs(blobs, index, queue, queue_name, after_index, promote_delay, vectors)
        self._probe = None if vectors is None else EmbedderProbe(vectors.query_embedder, clock)

    def embedder_health(self) -> dict[str, object] | None:
        """For health details: the embedder and whether it answers, from a probe cached
        per process (:mod:`memnet.services.search.embedder_probe`); None without an embedder."""
        if self._vectors is None or self._probe is None:
            return None
        return {"describe": self._vectors.describe(), **self._probe.status().as_json()}

    # -- write and read --------------------------------------------------------------

    def write(
        self,
        caller: Caller,
        tenant_id: str,
        user_id: str,
        body: Json,
        key: str,
        fingerprint: str,
    ) -> Response:
        """The answer is stored with the idempotency key, to answer a retry with it:
        ``{created, body: {event, indexed}}`` (``replayed`` on such a retry)."""
        caller.require(tenant_id, "write")
        if self._tombstones is not None:  # 409 while the user is being forgotten
            self._tombstones.check(tenant_id, user_id)
        parsed = parse_event(body, tenant_id, user_id, caller.caller_id)
        caller.require_service(parsed["service_id"])
        # the class is checked before a stored answer is replayed
        draft = _Draft(
            parsed, self._classes.checked(caller, EventClass.of(parsed.get("sensitivity")))
        )
        outcome = self._idempotency.begin(
            tenant_id,
            user_id,
            caller.caller_id,
            key,
            fingerprint,
            lambda change_id: self._already_stored(draft.final(change_id)),
        )
        if isinstance(outcome, Replay):
            return replace(outcome.response, replayed=True)
        record = draft.final(outcome.change_id)
        try:
            created = self._store(record)
        except StorageError as error:  # the blob write may have landed: settle, never guess
            response = self._settle(record, outcome, error)
        except Exception:
            self._idempotency.release(outcome)  # nothing was stored (EVENT_EXISTS)
            raise
        else:
            # Stored. If indexing and queueing both fail, this raises (503) with the claim
            # left pending, so a retry with the key finds the blob and indexes it.
            response = self._response(record, created)
        self._idempotency.complete(outcome, response)
        return response

    def _settle(self, record: EventRecord, ticket: Ticket, error: StorageError) -> Response:
        """After a blob write of unknown outcome: its response if the blob is there; if it
        is not, release the key and report the error; if storage cannot tell, keep the
        claim pending so that a retry settles it (or takes the key over after the lease)."""
        try:
            landed = self._already_stored(record)
        except StorageError:
            raise error from None
        if landed is None:
            self._idempotency.release(ticket)
            raise error
        return landed

    def get(self, caller: Caller, tenant_id: str, user_id: str, event_id: str) -> EventRecord:
        caller.require(tenant_id, "read")
        record = load_event(self._blobs, tenant_id, user_id, event_id)
        if record is None or not self._classes.sees(caller, record):  # hidden is absent
            raise NotFound("Event does not exist.", code="EVENT_NOT_FOUND")
        return record

    def _store(self, record: EventRecord) -> bool:
        """Write the record create-only: True if it was created, False if this very event
        is already stored."""
        data = dump(record.as_json())
        try:
            self._blobs.write(record.name, data, Condition.create_only())
        except PreconditionFailed as exc:
            if self._blobs.read(record.name).data != data:
                raise Conflict(
                    "An event with this event_id exists with other content.",
                    code="EVENT_EXISTS",
                    event_id=record.event_id,
                ) from exc
            return False
        return True

    def _response(self, record: EventRecord, created: bool) -> Response:
        """What the write answers; ``created`` is False when the event already existed."""
        body = {"event": record.as_json(), "indexed": self._index_now(record)}
        return Response(created, body)

    def _already_stored(self, record: EventRecord) -> Response | None:
        try:
            stored = self._blobs.read(record.name)
        except BlobNotFound:
            return None
        if stored.data != dump(record.as_json()):
            return None
        return self._response(record, True)

    def _index_now(self, record: EventRecord) -> bool:
        """Index inline; on any failure (the record is durable: never a 500) queue the
        job and report ``indexed: false``. A queue failure propagates."""
        tenant_id, user_id, event_id = record.tenant_id, record.user_id, record.event_id
        try:
            self._index.upsert([record.indexed()])
            telemetry.index_lagged(0.0)  # indexed as it was recorded
            self._jobs.promote_later(tenant_id, user_id)
        except Exception:
            log.warning("event %s not indexed inline; queued", event_id, exc_info=True)
        else:
            self._jobs.embed_later(tenant_id, user_id, event_id)
            return True
        self._jobs.enqueue("index", tenant_id, user_id, [event_id])
        return False

    def restore(self, tenant_id: str, user_id: str, records: list[EventRecord]) -> Restored:
        """Store one user's events recorded elsewhere as they were (an import, issue 27:
        ids, timestamps and ``recorded_by`` kept), create-only, then index them by the
        index worker's own path (without promotion). An event already stored identically
        is the same write; one stored with other content is left as it is and returned
        in ``conflicts`` (a live write took the id first)."""
        stored: list[str] = []
        conflicts: list[str] = []
        for record in records:
            if (record.tenant_id, record.user_id) != (tenant_id, user_id):
                raise ValueError(f"event {record.event_id} is not {tenant_id}/{user_id}'s")
            try:
                self._store(record)
            except Conflict:
                conflicts.append(record.event_id)
            else:
                stored.append(record.event_id)
        report = self._jobs.index_events(tenant_id, user_id, stored, promote=False)
        return Restored(len(stored), tuple(conflicts), report)

    # -- search ---------------------------------------------------------------------

    def search(
        self,
        caller: Caller,
        query: EventQuery,
        half_life_days: float | None = None,
        ranking: Ranking | None = None,
        dense_weight: float | None = None,
    ) -> SearchResults:
        """Ranked events with their pointers; ``half_life_days`` halves a hit's score for
        every that many days of age (reranking the index's top 3 x top_k); ``ranking``
        blends relevance, importance and recency (:mod:`memnet.domain.ranking`) over the
        index's top :func:`_candidates`, each event read once. ``dense_weight`` (hybrid
        retrieval, with an embedder): the dense ranking's share, else the service's."""
        caller.require(query.tenant_id, "read")
        query = replace(query, classes=self._classes.visible(caller))  # never the asker's say
        started = time.perf_counter()
        weight = self._dense_weight if dense_weight is None else dense_weight
        if ranking is not None:
            results = self._blended(query, ranking, weight)
        else:
            wide = query if half_life_days is None else _widen(query)
            hits = self._ranked(wide, weight)
            if half_life_days is not None:
                hits = sorted(
                    hits, key=lambda h: -h.score * self._decay(h.timestamp, half_life_days)
                )
            results = list(self._resolve(query, hits))[: query.top_k]
        millis = (time.perf_counter() - started) * 1000
        telemetry.searched(bool(query.text.strip()), millis, len(results))  # ranked: has text
        return SearchResults(tuple(results))

    def _blended(self, query: EventQuery, ranking: Ranking, weight: float) -> list[Hit]:
        found = list(self._resolve(query, self._ranked(_candidates(query), weight)))
        events: list[Mapping[str, Any]] = [h.event.as_json() for h in found]
        scored = blend(ranking, [h.score for h in found], events, self._clock.now())
        ranked = sorted(zip(found, scored, strict=True), key=lambda pair: -pair[1].score)
        return [
            replace(hit, score=round(s.score, 6), ranking=s.parts())
            for hit, s in ranked[: query.top_k]
        ]

    def _ranked(self, query: EventQuery, weight: float) -> list[EventHit]:
        """The index's ranking, fused with the dense one (``weight`` its share) when
        there are vectors to ask and the text has words; lexical alone otherwise, or if
        the embedder fails."""
        lexical = self._index.search(query)
        if self._vectors is None or weight == 0.0:
            return lexical
        dense = self._vectors.dense(query)
        if dense is None:
            return lexical
        return fuse(lexical, dense, weight)[: query.top_k]

    def _resolve(self, query: EventQuery, hits: list[EventHit]) -> Iterator[Hit]:
        for hit in hits:
            record = load_event(self._blobs, query.tenant_id, query.user_id, hit.event_id)
            if record is None:  # the index is ahead of the blobs: drop the stale entry
                self._jobs.enqueue("delete", query.tenant_id, query.user_id, [hit.event_id])
                continue
            if not record.shown(query.classes):  # an index that failed to filter: never shown
                continue
            yield Hit(record, round(hit.score, 6))

    def _decay(self, timestamp: str, half_life_days: float) -> float:
        age = self._clock.now() - parse_timestamp(timestamp)
        return math.pow(0.5, max(age.total_seconds(), 0) / 86_400 / half_life_days)

    # -- the index side, in memnet.services.search.index --------------------------------------

    def reindex(self, caller: Caller, tenant_id: str | None, user_id: str | None) -> Reindexing:
        """Queue the rebuild of one user's, one tenant's or (admins bound to every
        tenant) the whole index from the event blobs (:meth:`IndexJobs.reindex`)."""
        _require_scope(caller, tenant_id)
        return self._jobs.reindex(tenant_id, user_id)

    def handle_job(self, body: str) -> IndexReport:
        return self._jobs.handle_job(body)

    def drain(self) -> IndexReport:
        return self._jobs.drain()


@dataclass(frozen=True)
class Restored:
    """What :meth:`EventService.restore` stored, refused and indexed."""

    stored: int
    conflicts: tuple[str, ...]
    index: IndexReport


@dataclass(frozen=True)
class _Draft:
    """A checked event body (its class checked apart) before its id is known."""

    parsed: Json
    named: EventClass | None

    def final(self, change_id: str) -> EventRecord:
        """A generated event id (none given) derives from the idempotency claim, so that
        a retry of the same request finds the event its first attempt stored."""
        event_id = self.parsed["event_id"] or "evt_" + change_id[4:]
        record = EventRecord.from_json({**self.parsed, "event_id": event_id})
        return replace(record, sensitivity=self.named)


@dataclass(frozen=True)
class Hit:
    """One search result: the event, its score, its pointers (its snapshot and evidence),
    and with a blended ranking the score's parts."""

    event: EventRecord
    score: float
    ranking: dict[str, float] | None = None

    def as_json(self) -> Json:
        pointers = {"snapshot_uri": self.event.snapshot_uri, "evidence": self.event.evidence}
        found = {"event": self.event.as_json(), "score": self.score, "pointers": pointers}
        return found if self.ranking is None else {**found, "ranking": self.ranking}


@dataclass(frozen=True)
class SearchResults:
    results: tuple[Hit, ...]

    def as_json(self) -> Json:
        return {"results": [h.as_json() for h in self.results], "count": len(self.results)}


def _widen(query: EventQuery) -> EventQuery:
    return replace(query, top_k=min(query.top_k * 3, 300))


MAX_CANDIDATES = 100  # events read to blend one search: each is a blob read


def _candidates(query: EventQuery) -> EventQuery:
    """The index's top 3 x top_k, at most :data:`MAX_CANDIDATES` (and never fewer than
    top_k): an important or recent event can rise from below the top_k by relevance."""
    return replace(query, top_k=max(query.top_k, min(query.top_k * 3, MAX_CANDIDATES)))


def _require_scope(caller: Caller, tenant_id: str | None) -> None:
    if tenant_id is not None:
        caller.require(tenant_id, "admin")
    elif ANY not in caller.tenants or "admin" not in caller.roles:
        raise Forbidden(
            "Reindexing everything needs an admin bound to all tenants.", code="TENANT_FORBIDDEN"
        )
