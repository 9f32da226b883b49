"""Writing an archive's records into this deployment, one kind at a time (the import's
writes: :mod:`memnet.services.transfer.importer` says in which order and why). Every
write is create-only, and a record already there with the same bytes is the same write;
a record a live write created first is kept, and the import's is returned as a
conflict, never raised."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator

from memnet.domain.audit_records import AuditRecord
from memnet.domain.envelope import Json
from memnet.domain.errors import Conflict
from memnet.domain.layout import DocumentRef, SnapshotRef, receipt_name
from memnet.ports import BlobNotFound, BlobStore, Condition, PreconditionFailed
from memnet.services.documents.audit import AuditLog
from memnet.services.events.records import EventRecord
from memnet.services.events.service import EventService
from memnet.services.governance.holds import Hold, LegalHolds
from memnet.services.records import dump
from memnet.services.replay.snapshots import SnapshotService

MAX_CHAIN_WALK = 10_000  # changes a live write may have added to an imported document


class RecordWrites:
    def __init__(
        self,
        blobs: BlobStore,
        audit: AuditLog,
        events: EventService,
        holds: LegalHolds,
        snapshots: SnapshotService,
    ) -> None:
        self.blobs, self.audit_log, self.holds = blobs, audit, holds
        self._events, self._snapshots = events, snapshots

    def write(
        self, kind: str, batch: list[Json], tenant_id: str, user_id: str, actor: str
    ) -> list[Json]:
        """Write one batch of one kind (records already the target user's); the
        conflicts."""
        if kind == "events":
            return self.events(tenant_id, user_id, batch)
        if kind == "holds":
            for record in batch:
                self.hold(tenant_id, user_id, record, actor)
            return []
        if kind == "snapshots":
            found = (self.snapshot(tenant_id, user_id, r) for r in batch)
            return [c for c in found if c is not None]
        write = {
            "audit": self.audit,
            "documents": self.document,
            "replays": self.replay,
            "receipts": self.receipt,
        }[kind]
        return [c for c in map(write, batch) if c is not None]

    def audit(self, record: Json) -> Json | None:
        audit = AuditRecord.from_json(record)
        try:
            self.audit_log.write(audit.ref, audit)
        except PreconditionFailed:
            return {"kind": "audit", "change_id": audit.change_id}
        return None

    def document(self, record: Json) -> Json | None:
        ref = DocumentRef(**record["ref"])
        head = record["document"]["change_id"]
        if self._created(ref.blob_name, dump(record["document"])) or self._ours(ref, head):
            return None
        for written in _quietly(self.audit_log.chain(ref, head)):  # off every chain now
            self.audit_log.discard(ref, written.change_id)
        return {"kind": "documents", "namespace": ref.namespace, "path": ref.path}

    def _ours(self, ref: DocumentRef, head: str) -> bool:
        """Whether the document there is the imported one, changed since by live writes."""
        try:
            current = self.blobs.read(ref.blob_name)
        except BlobNotFound:
            return False
        found = json.loads(current.data).get("change_id")
        chain = _quietly(self.audit_log.chain(ref, found))
        return any(r.change_id == head for _, r in zip(range(MAX_CHAIN_WALK), chain, strict=False))

    def events(self, tenant_id: str, user_id: str, records: list[Json]) -> list[Json]:
        events = [EventRecord.from_json(r) for r in records]
        restored = self._events.restore(tenant_id, user_id, events)
        return [{"kind": "events", "event_id": e} for e in restored.conflicts]

    def replay(self, record: Json) -> Json | None:
        ref = SnapshotRef(
            record["tenant_id"], record["user_id"], record["conversation_id"], record["snapshot_id"]
        )
        if self._created(ref.replay_name, dump(record)):
            return None
        return {"kind": "replays", "replay_id": record["replay_id"]}

    def snapshot(self, tenant_id: str, user_id: str, record: Json) -> Json | None:
        ids = record["snapshot"]
        ref = SnapshotRef(tenant_id, user_id, ids["conversation_id"], ids["snapshot_id"])
        try:
            self._snapshots.restore(ref, record["content"])
        except Conflict:
            return {"kind": "snapshots", **ids}
        return None

    def receipt(self, record: Json) -> Json | None:
        if self._created(receipt_name(record["tenant_id"], record["receipt_id"]), dump(record)):
            return None
        return {"kind": "receipts", "receipt_id": record["receipt_id"]}

    def hold(self, tenant_id: str, user_id: str, record: Json, actor: str) -> None:
        self.holds.restore(tenant_id, user_id, Hold.from_json(record["hold"]), actor)

    def _created(self, name: str, data: bytes) -> bool:
        """Write create-only; True when written now or already there with these bytes."""
        try:
            self.blobs.write(name, data, Condition.create_only())
        except PreconditionFailed:
            try:
                return self.blobs.read(name).data == data
            except BlobNotFound:
                return False
        return True


def _quietly(chain: Iterator[AuditRecord]) -> Iterator[AuditRecord]:
    """A chain read until it ends or breaks (a broken chain is no chain of ours)."""
    with contextlib.suppress(LookupError):
        yield from chain
