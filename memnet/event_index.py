"""The index side of event digests (spec 10.5, 20; ARCHITECTURE.md "Events"): the search
index is derived from the event blobs. Index and delete jobs travel through the queue in
batches; :meth:`IndexJobs.handle_job` is the queue worker, :meth:`IndexJobs.reindex`
queues the rebuild of a scope from the blobs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from memnet.layout import user_prefix
from memnet.ports import BlobNotFound, BlobStore, IndexedEvent, MessageQueue, SearchIndex

INDEX_QUEUE = "memnet-index"
JOB_BATCH = 200


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
    )


class IndexJobs:
    """Index and delete jobs for a :class:`SearchIndex`, through a queue."""

    def __init__(
        self, blobs: BlobStore, index: SearchIndex, queue: MessageQueue, queue_name: str
    ) -> None:
        self._blobs, self._index = blobs, index
        self._queue, self._queue_name = queue, queue_name

    def reindex(self, tenant_id: str | None, user_id: str | None) -> dict[str, Any]:
        """Queue index jobs for every event blob in scope, and delete jobs for index
        entries whose blob is gone. Scope: one user, one tenant, or everything."""
        found = _group(self._event_names(tenant_id, user_id))
        messages = sum(self.enqueue("index", t, u, ids) for (t, u), ids in found.items())
        stale = self._stale(found, tenant_id, user_id)
        messages += sum(self.enqueue("delete", t, u, ids) for (t, u), ids in stale.items())
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

    def enqueue(self, action: str, tenant_id: str, user_id: str, event_ids: list[str]) -> int:
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
        records = [
            r for e in ids if (r := load_event(self._blobs, tenant_id, user_id, e)) is not None
        ]
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


def _group(names: Iterator[str]) -> dict[tuple[str, str], list[str]]:
    grouped: dict[tuple[str, str], list[str]] = {}
    for name in names:
        parts = name.split("/")  # tenants/{t}/users/{u}/events/{id}.json
        if len(parts) == 6 and parts[4] == "events" and parts[5].endswith(".json"):
            grouped.setdefault((parts[1], parts[3]), []).append(parts[5][: -len(".json")])
    return grouped
