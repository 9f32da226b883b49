"""The audit log: audit records (spec 19.2, :mod:`memnet.domain.audit_records`) in blobs.

A record is written create-only *before* the document it describes; the document then
stores the record's ``change_id``, and each record names the ``prev_change_id`` it was
based on. The committed history of a document is therefore the chain reachable from
the document's ``change_id``; a record off that chain (a crash or a lost race between
the two writes) is an orphan: never shown as history, removed by
:meth:`memnet.services.documents.service.DocumentService.sweep_orphans`. ``post_etag`` is
derived: the next record's ``pre_etag``, or the document's current ETag for the newest
record. Retention removes records older than its rule, after raising the user's audit
horizon past them; a chain then ends at the horizon (docs/retention.md).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from memnet.domain.audit_records import AuditRecord, change_time
from memnet.domain.layout import DocumentRef, audit_horizon_name, audit_name, user_prefix
from memnet.domain.timestamps import format_millis, parse_timestamp
from memnet.ports import BlobNotFound, BlobStore, Condition, PreconditionFailed
from memnet.services.records import JsonRecords, dump


class AuditLog:
    """Reads and writes audit records in a :class:`BlobStore`."""

    def __init__(self, blobs: BlobStore) -> None:
        self._blobs, self._records = blobs, JsonRecords(blobs)

    def write(self, ref: DocumentRef, record: AuditRecord) -> None:
        """Create-only; a retried create that finds its own identical record is fine."""
        name = ref.audit_name(record.change_id)
        data = dump(record.as_json())
        try:
            self._blobs.write(name, data, Condition.create_only())
        except PreconditionFailed:
            if self._blobs.read(name).data != data:
                raise

    def read(self, tenant_id: str, user_id: str, change_id: str) -> AuditRecord | None:
        found = self._records.read(audit_name(tenant_id, user_id, change_id))
        return None if found is None else AuditRecord.from_json(found.value)

    def discard(self, ref: DocumentRef, change_id: str) -> None:
        """Best-effort removal of a record whose document write did not happen."""
        with contextlib.suppress(BlobNotFound, PreconditionFailed):
            self._blobs.delete(ref.audit_name(change_id))

    def chain(self, ref: DocumentRef, head: str | None) -> Iterator[AuditRecord]:
        """Committed records of one document, newest first, from the ``head`` change id.

        The chain ends quietly at a missing record minted at or before the user's audit
        horizon (retention removed it and everything older); a missing record newer
        than the horizon is a broken chain (:class:`LookupError`)."""
        change_id = head
        while change_id is not None:
            record = self.read(ref.tenant_id, ref.user_id, change_id)
            if record is None:
                if self._before_horizon(ref, change_id):
                    return
                raise LookupError(f"audit chain broken at {change_id}")
            yield record
            change_id = record.prev_change_id

    def horizon(self, tenant_id: str, user_id: str) -> datetime | None:
        """The user's audit horizon: records minted at or before it may have been removed
        by retention (``audit_horizon.json``); None when none ever was."""
        found = self._records.read(audit_horizon_name(tenant_id, user_id))
        return None if found is None else _horizon(found.value)

    def raise_horizon(self, tenant_id: str, user_id: str, moment: datetime) -> None:
        """Move the horizon to ``moment`` unless it is already later (ETag-conditional
        read-modify-write, so two sweeps never move it back). Retention calls this
        before it deletes any record minted up to ``moment``."""

        def later(found: dict[str, Any] | None) -> dict[str, Any] | None:
            if found is not None and _horizon(found) >= moment:
                return None
            return {"horizon": format_millis(moment)}

        self._records.update(audit_horizon_name(tenant_id, user_id), later)

    def _before_horizon(self, ref: DocumentRef, change_id: str) -> bool:
        horizon = self.horizon(ref.tenant_id, ref.user_id)
        return horizon is not None and change_time(change_id) <= horizon

    def since(self, ref: DocumentRef, head: str | None, base: str | None) -> list[AuditRecord]:
        """Committed records after ``base`` (exclusive), newest first."""
        later: list[AuditRecord] = []
        for record in self.chain(ref, head):
            if record.change_id == base:
                break
            later.append(record)
        return later

    def history(
        self, ref: DocumentRef, head: str | None, etag: str | None, limit: int | None = None
    ) -> list[dict[str, Any]]:
        """Up to ``limit`` committed records from ``head`` (whose document has ``etag``),
        newest first, each with its derived ``post_etag``."""
        entries: list[dict[str, Any]] = []
        post_etag = etag
        for record in self.chain(ref, head):
            if limit is not None and len(entries) >= limit:
                break
            entries.append({**record.as_json(), "post_etag": post_etag})
            post_etag = record.pre_etag
        return entries

    def orphans(self, tenant_id: str, user_id: str, heads: dict[str, str | None]) -> list[str]:
        """Change ids under the user's audit prefix that no document chain reaches.

        ``heads`` maps each document blob name of the user to its current change id."""
        committed: set[str] = set()
        for name, head in heads.items():
            ref = _ref_of(tenant_id, user_id, name)
            committed.update(r.change_id for r in self.chain(ref, head))
        prefix = f"{user_prefix(tenant_id, user_id)}audit/"
        names = (n[len(prefix) : -len(".json")] for n in self._blobs.list_names(prefix))
        return [change_id for change_id in names if change_id not in committed]


def _ref_of(tenant_id: str, user_id: str, blob_name: str) -> DocumentRef:
    rest = blob_name[len(user_prefix(tenant_id, user_id) + "documents/") :]
    namespace, _, path = rest.partition("/")
    return DocumentRef(tenant_id, user_id, namespace, path)


def _horizon(stored: dict[str, Any]) -> datetime:
    return parse_timestamp(stored["horizon"], "horizon")
