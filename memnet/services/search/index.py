"""The index side of event digests (spec 10.5, 20; docs/decisions.md "Events and search"):
the search index is derived from the event blobs. Index and delete jobs travel through the queue in
batches; :meth:`IndexJobs.handle_job` is the queue worker, :meth:`IndexJobs.reindex`
queues the rebuild of a scope from the blobs.

One bad event never fails its batch (docs/decisions.md): the worker checks each blob on
its own (:func:`~memnet.domain.event_model.parse_stored`), skips one that cannot be indexed
(logged, reported in :class:`IndexReport`, its index entry removed) and indexes the rest.
Only a transient failure, or an index that refuses every event of a job, fails the job
(the queue retries it).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, astuple, dataclass, replace

from memnet.domain.errors import BadRequest
from memnet.domain.event_model import parse_stored
from memnet.domain.layout import user_prefix, vector_model_name
from memnet.ports import (
    BlobNotFound,
    BlobStore,
    Condition,
    EmbedderError,
    IndexedEvent,
    MessageQueue,
    PreconditionFailed,
    SearchIndex,
    StorageError,
    StorageUnavailable,
)
from memnet.services import telemetry
from memnet.services.events.records import EventRecord, IndexReport, SkippedEvent, event_name
from memnet.services.search.vectors import EventVectors

INDEX_QUEUE = "memnet-index"
JOB_BATCH = 200
log = logging.getLogger("memnet.services.events.service")


CLAIM_SECONDS = 900  # a model-change claim older than this, still pending, is taken up again
PROMOTE_MEMORY = 10_000  # users remembered; past that the memory starts again


class IndexJobs:
    """Index and delete jobs for a :class:`SearchIndex`, through a queue."""

    def __init__(
        self,
        blobs: BlobStore,
        index: SearchIndex,
        queue: MessageQueue,
        queue_name: str,
        after_index: Callable[[str, str], None] | None = None,
        promote_delay: float = 30.0,
        vectors: EventVectors | None = None,
    ) -> None:
        self._blobs, self._index, self._vectors = blobs, index, vectors
        self._promote_delay = promote_delay
        self._queue, self._queue_name = queue, queue_name
        self._after_index = after_index  # e.g. promotion; never fails the job
        self._promote_sent: dict[tuple[str, str], float] = {}  # per user, this process
        self._model_checked = vectors is None  # nothing to check without an embedder
        self._model_lock = threading.Lock()

    def reindex(self, tenant_id: str | None, user_id: str | None) -> Reindexing:
        """Queue index jobs for every event blob in scope, and delete jobs for index
        entries whose blob is gone. Scope: one user, one tenant, or everything."""
        found = _group(self._event_names(tenant_id, user_id))
        messages = sum(self.enqueue("index", t, u, ids) for (t, u), ids in found.items())
        stale = self._stale(found, tenant_id, user_id)
        messages += sum(self.enqueue("delete", t, u, ids) for (t, u), ids in stale.items())
        events, gone = sum(map(len, found.values())), sum(map(len, stale.values()))
        return Reindexing(events=events, stale_entries=gone, messages=messages)

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

    def promote_later(self, tenant_id: str, user_id: str) -> None:
        """Queue the after-indexing work (promotion) for a user whose events were indexed
        inline: the write path does not do it. The job becomes visible ``promote_delay``
        seconds later, and this process queues no other for the user meanwhile: a burst
        of events promotes once, after it. Best effort: a failure is logged, and the
        user's next event queues it again."""
        if self._after_index is None:
            return
        now, key = time.monotonic(), (tenant_id, user_id)
        if now - self._promote_sent.get(key, -math.inf) < self._promote_delay:
            return  # a job is queued for after this burst: it will see these events too
        if len(self._promote_sent) > PROMOTE_MEMORY:
            self._promote_sent.clear()
        self._promote_sent[key] = now
        job = {"action": "promote", "tenant_id": tenant_id, "user_id": user_id, "event_ids": []}
        try:
            delay = math.ceil(self._promote_delay)
            self._queue.send(self._queue_name, json.dumps(job), delay_seconds=delay)
        except Exception:
            log.warning("promotion for %s/%s not queued", tenant_id, user_id, exc_info=True)

    def enqueue(self, action: str, tenant_id: str, user_id: str, event_ids: list[str]) -> int:
        batches = [event_ids[i : i + JOB_BATCH] for i in range(0, len(event_ids), JOB_BATCH)]
        for batch in batches:
            job = {
                "action": action,
                "tenant_id": tenant_id,
                "user_id": user_id,
                "event_ids": batch,
                "queued_at": time.time(),  # for memnet.index.lag (wall time: across processes)
            }
            self._queue.send(self._queue_name, json.dumps(job))
        return len(batches)

    def handle_job(self, body: str) -> IndexReport:
        """The queue worker: apply one index, delete or promote job. Idempotent; raises on a
        transient failure so that the queue retries it (and poisons it after the host's
        max count), never because of one bad event."""
        job = json.loads(body)
        tenant_id, user_id, ids = job["tenant_id"], job["user_id"], job["event_ids"]
        if job["action"] == "promote":
            if self._after_index is not None:
                self._after_index(tenant_id, user_id)
            return IndexReport(jobs=1)
        if job["action"] == "delete":
            self._index.delete(tenant_id, user_id, ids)
            return IndexReport(jobs=1, removed=len(ids))
        if job["action"] == "embed":  # only these jobs ask the model: it never holds up others
            self.check_vector_model()
            report = IndexReport(jobs=1)
            report.embedded = self._embed(tenant_id, user_id, self._entries(
                tenant_id, user_id, ids, report.skipped))  # fmt: skip
            return report
        report = self.index_events(tenant_id, user_id, ids)
        if report.indexed and "queued_at" in job:  # jobs queued before the field lack it
            telemetry.index_lagged(time.time() - float(job["queued_at"]))
        return report

    def index_events(
        self, tenant_id: str, user_id: str, ids: list[str], promote: bool = True
    ) -> IndexReport:
        """Index the events whose blobs are valid; remove the entries of the others.
        ``promote``: run the after-indexing work (promotion); an import does not (the
        documents it brings already hold what the source promoted)."""
        report = IndexReport(jobs=1)
        entries = self._entries(tenant_id, user_id, ids, report.skipped)
        report.skipped += self._upsert(entries)
        done = {e.event_id for e in entries} - {s.event_id for s in report.skipped}
        unindexed = sorted(set(ids) - done)
        if unindexed:
            self._index.delete(tenant_id, user_id, unindexed)
        report.indexed, report.removed = len(done), len(unindexed)
        if done and self._vectors is not None:  # the model's part, in a job of its own
            self.enqueue("embed", tenant_id, user_id, sorted(done))
        for s in report.skipped:
            log.warning("event %s/%s/%s not indexable, skipped: %s", *astuple(s))
        if done and promote and self._after_index is not None:
            self._after_index(tenant_id, user_id)
        return report

    def check_vector_model(self) -> bool:
        """Once per process, before its first embed job: if the embedding model differs
        from the one recorded for the index's vectors (or none is), claim the change by a
        conditional write of the record, and only if the claim wins queue a reindex of
        everything (its jobs re-embed every stale vector). Concurrent workers and threads
        thus queue it once. A failure is logged and the check tried again by the next
        embed job. True when this call queued the reindex."""
        if self._vectors is None:
            return False
        with self._model_lock:
            if self._model_checked:
                return False
            try:
                changed = self._claim_model_change(self._vectors.model)
            except (EmbedderError, StorageError) as e:
                log.warning("embedding model not checked (tried again later): %s", e)
                return False
            self._model_checked = True
            return changed

    def _claim_model_change(self, model: str) -> bool:
        """The record says which model the vectors are being (``pending``) or were made
        with. A claim is written before the reindex and marked done after it, so a change
        whose reindex failed, or whose claimer died, is taken up again: by the claimer
        itself (its claim withdrawn) or, after :data:`CLAIM_SECONDS`, by anyone."""
        try:
            held = self._blobs.read(vector_model_name())
            recorded, condition = ModelRecord.parse(held.data), Condition.match(held.etag)
        except BlobNotFound:
            recorded, condition = None, Condition.create_only()
        if recorded is not None and not recorded.needs_claim(model, time.time()):
            return False  # done, or under way elsewhere
        claim = ModelRecord.claiming(model, recorded, time.time())
        try:
            etag = self._blobs.write(vector_model_name(), claim.encoded(), condition)
        except PreconditionFailed:
            return False  # another worker claimed it and queues the reindex
        try:
            queued = self.reindex(None, None)
        except Exception:
            self._withdraw(recorded, etag)
            raise
        log.info("embedding model %s (was %s): reindex queued %s", model, claim.previous, queued)
        done = replace(claim, pending=False).encoded()
        with contextlib.suppress(PreconditionFailed):  # claimed again meanwhile: theirs now
            self._blobs.write(vector_model_name(), done, Condition.match(etag))
        return True

    def _withdraw(self, recorded: ModelRecord | None, etag: str) -> None:
        """Put the record back as it was before this claim (best effort: a claim left
        behind is taken up after :data:`CLAIM_SECONDS`)."""
        try:
            if recorded is not None:
                self._blobs.write(vector_model_name(), recorded.encoded(), Condition.match(etag))
            else:
                self._blobs.delete(vector_model_name(), Condition.match(etag))
        except Exception:
            log.warning("embedding model claim not withdrawn", exc_info=True)

    def embed_later(self, tenant_id: str, user_id: str, event_id: str) -> None:
        """Queue the embedding of an event indexed inline (the write path never asks the
        model). Best effort, as :meth:`promote_later`: the write stays a success, and a
        lost job leaves the event found by its words until a reindex embeds it."""
        if self._vectors is None:
            return
        try:
            self.enqueue("embed", tenant_id, user_id, [event_id])
        except Exception:
            log.warning("embedding of %s/%s/%s not queued", tenant_id, user_id, event_id,
                        exc_info=True)  # fmt: skip

    def _embed(self, tenant_id: str, user_id: str, entries: list[IndexedEvent]) -> int:
        """Embed the entries' stale vectors (none without an embedder). A model that fails
        for the whole batch (down, or a wrong key or model) fails the job, which the queue
        retries; a text it refuses alone, or vectors the index refuses, are logged and
        stay missing until the next reindex."""
        if self._vectors is None or not entries:
            return 0
        try:
            return self._vectors.refresh(tenant_id, user_id, entries)
        except StorageUnavailable:
            raise
        except (StorageError, ValueError) as e:  # the index refuses the vectors: retrying won't do
            log.warning("vectors of %s/%s not stored: %s", tenant_id, user_id, e)
            return 0

    def _entries(
        self, tenant_id: str, user_id: str, ids: list[str], skipped: list[SkippedEvent]
    ) -> list[IndexedEvent]:
        """The index entries of the valid event blobs; the invalid ones go to ``skipped``."""
        entries: list[IndexedEvent] = []
        for event_id in ids:
            try:
                entry = self._entry(tenant_id, user_id, event_id)
            except BadRequest as bad:
                skipped.append(SkippedEvent(tenant_id, user_id, event_id, bad.message))
                continue
            if entry is not None:
                entries.append(entry)
        return entries

    def _entry(self, tenant_id: str, user_id: str, event_id: str) -> IndexedEvent | None:
        """The index entry of an event blob; None if there is no blob; 400 (BadRequest)
        if the blob holds no valid event."""
        try:
            data = self._blobs.read(event_name(tenant_id, user_id, event_id)).data
        except BlobNotFound:
            return None
        return EventRecord.from_json(parse_stored(data, tenant_id, user_id, event_id)).indexed()

    def _upsert(self, entries: list[IndexedEvent]) -> list[SkippedEvent]:
        """Upsert in one call. If the index refuses the batch (not a transient failure),
        each entry on its own; returns those it refuses. When it refuses all of them the
        fault is the index's, not the events': the error propagates."""
        try:
            if entries:
                self._index.upsert(entries)
            return []
        except StorageUnavailable:
            raise
        except Exception:
            if len(entries) == 1:
                raise
            refused = [s for e in entries if (s := self._upsert_one(e)) is not None]
            if len(refused) == len(entries):
                raise
            return refused

    def _upsert_one(self, entry: IndexedEvent) -> SkippedEvent | None:
        try:
            self._index.upsert([entry])
        except StorageUnavailable:
            raise
        except Exception as refused:
            reason = f"refused by the index: {type(refused).__name__}: {refused}"
            return SkippedEvent(entry.tenant_id, entry.user_id, entry.event_id, reason)
        return None

    def drain(self) -> IndexReport:
        """Work off the index queue in this process, as the queue trigger would (the
        ``reindex --drain`` command; tests), and report what the jobs did. A failing job
        stays queued, visible again after its visibility timeout, and its error propagates."""
        report = IndexReport()
        self.check_vector_model()
        while messages := self._queue.receive(self._queue_name, max_messages=32):
            for message in messages:
                report.add(self.handle_job(message.body))
                self._queue.delete(self._queue_name, message)
        return report


@dataclass(frozen=True)
class Reindexing:
    """What a reindex queued: the event blobs in scope, the index entries whose blob is
    gone, and the messages sent for both."""

    events: int
    stale_entries: int
    messages: int

    def as_json(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class ModelRecord:
    """Which embedding model the index's vectors are being (``pending``) or were made
    with, and the one before it; a claim is taken at ``claimed_at`` (Unix seconds)."""

    model: str | None
    previous: str | None = None
    pending: bool = False
    claimed_at: float | None = None

    @classmethod
    def parse(cls, data: bytes) -> ModelRecord | None:
        """The stored record; None for one that is not a JSON object (overwritten).
        Members of the wrong type read as absent."""
        try:
            found = json.loads(data)
        except ValueError:
            return None
        if not isinstance(found, dict):
            return None
        model, previous, claimed = (found.get(k) for k in ("model", "previous", "claimed_at"))
        return cls(
            model if isinstance(model, str) else None,
            previous if isinstance(previous, str) else None,
            found.get("pending") is True,
            float(claimed) if isinstance(claimed, (int, float)) else None,
        )

    @classmethod
    def claiming(cls, model: str, recorded: ModelRecord | None, now: float) -> ModelRecord:
        """The claim for ``model`` over ``recorded``: a claim taken up again keeps the
        model the vectors were made with before it."""
        if recorded is None:
            return cls(model, None, True, now)
        previous = recorded.previous if recorded.model == model else None
        return cls(model, previous if previous is not None else recorded.model, True, now)

    def needs_claim(self, model: str, now: float) -> bool:
        """Whether ``model`` needs a reindex claimed: the vectors were made with another,
        or its claim is pending and older than :data:`CLAIM_SECONDS` (its claimer died)."""
        if self.model != model:
            return True
        age = now - self.claimed_at if self.claimed_at is not None else math.inf
        return self.pending and age >= CLAIM_SECONDS

    def encoded(self) -> bytes:
        return json.dumps(asdict(self)).encode()


def _group(names: Iterator[str]) -> dict[tuple[str, str], list[str]]:
    grouped: dict[tuple[str, str], list[str]] = {}
    for name in names:
        parts = name.split("/")  # tenants/{t}/users/{u}/events/{id}.json
        if len(parts) == 6 and parts[4] == "events" and parts[5].endswith(".json"):
            grouped.setdefault((parts[1], parts[3]), []).append(parts[5][: -len(".json")])
    return grouped
