"""Event digests (spec 9.2, 10.5, 10.6, 20): the blob is the record, the index derived.

Write: claim the idempotency key, store the event blob create-only (an identical event
already stored is the same write), then index it; if indexing fails the write still
succeeds and an index job goes to the queue. Search asks the index, then reads each hit's
blob (a hit whose blob is gone is skipped and queued for removal). Reindex walks the
blobs in scope and queues index jobs in batches, plus delete jobs for index entries whose
blob is gone; :func:`EventService.handle_job` is the queue worker.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC
from typing import Any

from memnet.auth import ANY, Caller
from memnet.clock import iso
from memnet.errors import Conflict, Forbidden, NotFound
from memnet.event_model import parse_event, parse_timestamp
from memnet.idempotency import IdempotencyStore, Replay, Response, Ticket
from memnet.layout import user_prefix
from memnet.ports import (
    BlobNotFound,
    BlobStore,
    Clock,
    Condition,
    EventQuery,
    IndexedEvent,
    MessageQueue,
    PreconditionFailed,
    SearchIndex,
    StorageError,
)

INDEX_QUEUE = "memnet-index"
JOB_BATCH = 200
RETRY_DELAY_SECONDS = 30


def event_name(tenant_id: str, user_id: str, event_id: str) -> str:
    return f"{user_prefix(tenant_id, user_id)}events/{event_id}.json"


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
    )


class EventService:
    def __init__(
        self,
        blobs: BlobStore,
        index: SearchIndex,
        queue: MessageQueue,
        idempotency: IdempotencyStore,
        clock: Clock,
        queue_name: str = INDEX_QUEUE,
    ):
        self._blobs, self._index, self._queue = blobs, index, queue
        self._idempotency, self._clock, self._queue_name = idempotency, clock, queue_name

    # -- write and read --------------------------------------------------------------

    def write(
        self,
        caller: Caller,
        tenant_id: str,
        user_id: str,
        body: dict[str, Any],
        key: str,
        fingerprint: str,
    ) -> Response:
        caller.require(tenant_id, "write")
        draft = parse_event(body, tenant_id, user_id, caller.caller_id)
        explicit = "event_id" in body
        outcome = self._idempotency.begin(
            tenant_id,
            user_id,
            key,
            fingerprint,
            lambda change_id: self._already_stored(_final(draft, change_id, explicit)),
        )
        if isinstance(outcome, Replay):
            return {**outcome.response, "replayed": True}
        record = _final(draft, outcome.change_id, explicit)
        try:
            status = self._store(record)
        except StorageError as error:  # the blob write may have landed: settle, never guess
            response = self._settle(record, outcome, error)
        except Exception:
            self._idempotency.release(outcome)  # nothing was stored (EVENT_EXISTS)
            raise
        else:
            # Stored. If indexing and queueing both fail, this raises with the claim left
            # pending, so a retry with the key finds the blob and indexes it (no 2nd event).
            response = self._response(record, status)
        self._idempotency.complete(outcome, response)
        return response

    def _settle(self, record: dict[str, Any], ticket: Ticket, error: StorageError) -> Response:
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

    def get(self, caller: Caller, tenant_id: str, user_id: str, event_id: str) -> dict[str, Any]:
        caller.require(tenant_id, "read")
        record = self._load(tenant_id, user_id, event_id)
        if record is None:
            raise NotFound("Event does not exist.", code="EVENT_NOT_FOUND")
        return record

    def _store(self, record: dict[str, Any]) -> int:
        """Write the record create-only: 201, or 200 if this very event is already stored."""
        name = event_name(record["tenant_id"], record["user_id"], record["event_id"])
        data = _dump(record)
        status = 201
        try:
            self._blobs.write(name, data, Condition.create_only())
        except PreconditionFailed as exc:
            if self._blobs.read(name).data != data:
                raise Conflict(
                    "An event with this event_id exists with other content.",
                    code="EVENT_EXISTS",
                    event_id=record["event_id"],
                ) from exc
            status = 200
        return status

    def _response(self, record: dict[str, Any], status: int) -> Response:
        return {"status": status, "body": {"event": record, "indexed": self._index_now(record)}}

    def _already_stored(self, record: dict[str, Any]) -> Response | None:
        name = event_name(record["tenant_id"], record["user_id"], record["event_id"])
        try:
            stored = self._blobs.read(name)
        except BlobNotFound:
            return None
        if stored.data != _dump(record):
            return None
        return self._response(record, 201)

    def _index_now(self, record: dict[str, Any]) -> bool:
        """Index inline; on failure queue the job and report ``indexed: false``."""
        try:
            self._index.upsert([indexed(record)])
            return True
        except StorageError:
            self._enqueue("index", record["tenant_id"], record["user_id"], [record["event_id"]])
            return False

    def _load(self, tenant_id: str, user_id: str, event_id: str) -> dict[str, Any] | None:
        try:
            record: dict[str, Any] = json.loads(
                self._blobs.read(event_name(tenant_id, user_id, event_id)).data
            )
        except BlobNotFound:
            return None
        return record

    # -- search ---------------------------------------------------------------------

    def search(
        self, caller: Caller, query: EventQuery, half_life_days: float | None = None
    ) -> dict[str, Any]:
        """Ranked events with their pointers; ``half_life_days`` halves a hit's score for
        every that many days of age (reranking the index's top 3 x top_k)."""
        caller.require(query.tenant_id, "read")
        wide = query if half_life_days is None else _widen(query)
        hits = self._index.search(wide)
        if half_life_days is not None:
            hits = sorted(hits, key=lambda h: -h.score * self._decay(h.timestamp, half_life_days))
        results = list(self._resolve(query, hits))[: query.top_k]
        return {"results": results, "count": len(results)}

    def _resolve(self, query: EventQuery, hits: list[Any]) -> Iterator[dict[str, Any]]:
        for hit in hits:
            record = self._load(query.tenant_id, query.user_id, hit.event_id)
            if record is None:  # the index is ahead of the blobs: drop the stale entry
                self._enqueue("delete", query.tenant_id, query.user_id, [hit.event_id])
                continue
            pointers = {
                "snapshot_uri": record.get("snapshot_uri"),
                "evidence": record.get("evidence"),
            }
            yield {"event": record, "score": round(hit.score, 6), "pointers": pointers}

    def _decay(self, timestamp: str, half_life_days: float) -> float:
        age = self._clock.now() - parse_timestamp(timestamp, "timestamp").astimezone(UTC)
        return math.pow(0.5, max(age.total_seconds(), 0) / 86_400 / half_life_days)

    # -- reindex and the queue worker -------------------------------------------------

    def reindex(self, caller: Caller, tenant_id: str | None, user_id: str | None) -> dict[str, Any]:
        """Queue index jobs for every event blob in scope, and delete jobs for index
        entries whose blob is gone. Scope: one user, one tenant, or everything."""
        _require_scope(caller, tenant_id)
        found = _group(self._event_names(tenant_id, user_id))
        messages = sum(self._enqueue("index", t, u, ids) for (t, u), ids in found.items())
        stale = self._stale(found, tenant_id, user_id)
        messages += sum(self._enqueue("delete", t, u, ids) for (t, u), ids in stale.items())
        return {
            "events": sum(map(len, found.values())),
            "stale_entries": sum(map(len, stale.values())),
            "messages": messages,
        }

    def _event_names(self, tenant_id: str | None, user_id: str | None) -> Iterator[str]:
        if tenant_id and user_id:
            yield from self._blobs.list_names(f"{user_prefix(tenant_id, user_id)}events/")
            return
        prefix = f"tenants/{tenant_id}/users/" if tenant_id else "tenants/"
        yield from (n for n in self._blobs.list_names(prefix) if "/events/" in n)

    def _stale(
        self, found: dict[tuple[str, str], list[str]], tenant_id: str | None, user_id: str | None
    ) -> dict[tuple[str, str], list[str]]:
        """Index entries in scope whose blob is gone (a whole-index scope includes tenants
        that have no blobs left at all)."""
        present = {(t, u, e) for (t, u), ids in found.items() for e in ids}
        stale: dict[tuple[str, str], list[str]] = {}
        for t, u, e in self._index.list_event_ids(tenant_id, user_id):
            if (t, u, e) not in present:
                stale.setdefault((t, u), []).append(e)
        return stale

    def _enqueue(self, action: str, tenant_id: str, user_id: str, event_ids: list[str]) -> int:
        batches = [event_ids[i : i + JOB_BATCH] for i in range(0, len(event_ids), JOB_BATCH)]
        for batch in batches:
            job = {"action": action, "tenant_id": tenant_id, "user_id": user_id, "event_ids": batch}
            self._queue.send(self._queue_name, json.dumps(job))
        return len(batches)

    def handle_job(self, body: str) -> None:
        """The queue worker: apply one index or delete job. Idempotent; raises on storage
        errors so that the queue retries (and poisons after the host's max count)."""
        job = json.loads(body)
        tenant_id, user_id, ids = job["tenant_id"], job["user_id"], job["event_ids"]
        if job["action"] == "delete":
            self._index.delete(tenant_id, user_id, ids)
            return
        records = [r for e in ids if (r := self._load(tenant_id, user_id, e)) is not None]
        if records:
            self._index.upsert([indexed(r) for r in records])
        gone = sorted(set(ids) - {r["event_id"] for r in records})
        if gone:
            self._index.delete(tenant_id, user_id, gone)

    def drain(self) -> int:
        """Work off the index queue in this process, as the queue trigger would (the
        ``reindex --drain`` command; tests). Returns the jobs done. A failing job stays
        queued, visible again after its visibility timeout, and its error propagates."""
        done = 0
        while messages := self._queue.receive(self._queue_name, max_messages=32):
            for message in messages:
                self.handle_job(message.body)
                self._queue.delete(self._queue_name, message)
                done += 1
        return done

    def now(self) -> str:
        return iso(self._clock.now())


def _final(draft: dict[str, Any], change_id: str, explicit: bool) -> dict[str, Any]:
    """A generated event id derives from the idempotency claim, so that a retry of the
    same request finds the event its first attempt stored."""
    return draft if explicit else {**draft, "event_id": "evt_" + change_id[4:]}


def _dump(record: dict[str, Any]) -> bytes:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode()


def _widen(query: EventQuery) -> EventQuery:
    return replace(query, top_k=min(query.top_k * 3, 300))


def _group(names: Iterator[str]) -> dict[tuple[str, str], list[str]]:
    grouped: dict[tuple[str, str], list[str]] = {}
    for name in names:
        parts = name.split("/")  # tenants/{t}/users/{u}/events/{id}.json
        if len(parts) == 6 and parts[4] == "events" and parts[5].endswith(".json"):
            grouped.setdefault((parts[1], parts[3]), []).append(parts[5][: -len(".json")])
    return grouped


def _require_scope(caller: Caller, tenant_id: str | None) -> None:
    if tenant_id is not None:
        caller.require(tenant_id, "admin")
    elif ANY not in caller.tenants or "admin" not in caller.roles:
        raise Forbidden(
            "Reindexing everything needs an admin bound to all tenants.", code="TENANT_FORBIDDEN"
        )
