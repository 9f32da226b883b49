"""A document's committed history: the audit records reachable from the change id the
document stores (docs/decisions.md "Audit and history";
:mod:`memnet.services.documents.audit`). It answers
what history shows, whether a write's precondition holds (or, asked to rebase, whether
its ops commute with the changes since), whether a change reached the document (after
a crash or a lost response), and which records no document reached (orphans)."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from memnet.domain.audit_records import AuditRecord, change_time, fold
from memnet.domain.bindings import Binding
from memnet.domain.document_model import StoredDocument, WriteCommand
from memnet.domain.envelope import Json
from memnet.domain.errors import BadRequest, EtagMismatch, NotFound
from memnet.domain.expiry import expired
from memnet.domain.layout import DocumentRef, audit_name, user_prefix
from memnet.domain.rebase import conflict
from memnet.ports import BlobNotFound, BlobStore, Clock
from memnet.services.documents.audit import AuditLog
from memnet.services.documents.idempotency import Response
from memnet.services.documents.last_versions import LastVersions

REBASE_MAX_CHANGES = 64  # a rebase looks this many changes back for its base version


class DocumentChain:
    def __init__(self, blobs: BlobStore, audit: AuditLog, clock: Clock) -> None:
        self._blobs, self._audit, self._clock = blobs, audit, clock
        self.versions = LastVersions()

    def load(self, ref: DocumentRef) -> StoredDocument | None:
        try:
            blob = self._blobs.read(ref.blob_name)
        except BlobNotFound:
            self.versions.drop(ref.blob_name)
            return None
        self.versions.put(ref.blob_name, blob.etag, blob.data)
        return StoredDocument(blob.etag, json.loads(blob.data), blob.data)

    def _named(self, cmd: WriteCommand, rebase_for: Binding | None) -> StoredDocument | None:
        """The version ``If-Match`` names, if it is the last one this instance saw (a
        create, or a rebase, which must start from the latest, always reads)."""
        wanted = cmd.precondition
        if wanted.if_match is None or wanted.create or (cmd.rebase and rebase_for is not None):
            return None
        data = self.versions.get(cmd.ref.blob_name, wanted.if_match)
        return None if data is None else StoredDocument(wanted.if_match, json.loads(data), data)

    def page(
        self, ref: DocumentRef, current: StoredDocument, limit: int, before: str | None
    ) -> HistoryPage:
        """Committed changes, newest first, ``limit`` of them from the head (or from just
        before the change ``before``)."""
        head: str | None = current.document.get("change_id")
        etag: str | None = current.etag
        if before is not None:
            head, etag = self._cursor(ref, current, before)
        entries = self._audit.history(ref, head, etag, limit + 1)
        next_before = entries[limit - 1]["change_id"] if len(entries) > limit else None
        oldest = entries[-1].get("prev_change_id") if entries else head
        # without a next page, an oldest change with a predecessor: retention removed it
        truncated = next_before is None and oldest is not None
        return HistoryPage(current.etag, tuple(entries[:limit]), next_before, truncated)

    def _cursor(
        self, ref: DocumentRef, current: StoredDocument, before: str
    ) -> tuple[str | None, str | None]:
        """Where the page before ``before`` starts. A change minted before the document
        was created is another document's that once had this path (an expired one a
        create replaced): its history is not this document's."""
        record = self._audit.read(ref.tenant_id, ref.user_id, before)
        created = current.document.get("created_at")
        if (
            record is None
            or (record.ref.namespace, record.ref.path) != (ref.namespace, ref.path)
            or (isinstance(created, str) and record.timestamp < created)
        ):
            raise BadRequest(
                "before names no change of this document.", code="INVALID_QUERY", field="before"
            )
        return record.prev_change_id, record.pre_etag

    def live(self, ref: DocumentRef) -> StoredDocument | None:
        """The document, unless it has expired (it then reads as absent)."""
        found = self.load(ref)
        return None if found is None or expired(found.document, self._clock.now()) else found

    def checked_current(
        self, cmd: WriteCommand, rebase_for: Binding | None
    ) -> tuple[StoredDocument | None, str | None]:
        """The latest live version, if the precondition holds for it: it names that
        version, or (asked to rebase, a patch of binding ``rebase_for``) the ops commute
        with every change since the version it names; and the ETag of an expired
        document in the way (a create replaces it, under that ETag), or None."""
        found = self._named(cmd, rebase_for) or self.load(cmd.ref)
        if found is not None and expired(found.document, self._clock.now()):
            self._check(cmd, rebase_for, None)
            return None, found.etag
        return self._check(cmd, rebase_for, found), None

    def _check(
        self, cmd: WriteCommand, rebase_for: Binding | None, current: StoredDocument | None
    ) -> StoredDocument | None:
        wanted = cmd.precondition
        if wanted.if_match is not None and current is None:
            raise NotFound(
                "Document does not exist; create it with If-None-Match: *.",
                code="DOCUMENT_NOT_FOUND",
            )
        if current is None or (not wanted.create and wanted.if_match == current.etag):
            return current
        if cmd.rebase and rebase_for is not None:
            self._check_rebase(cmd, rebase_for, current)
        elif wanted.create:
            raise EtagMismatch(
                "Document already exists (If-None-Match: *).", latest_etag=current.etag
            )
        else:
            raise EtagMismatch(
                "If-Match does not match latest document version.", latest_etag=current.etag
            )
        return current

    def _check_rebase(self, cmd: WriteCommand, binding: Binding, current: StoredDocument) -> None:
        """412 unless the changes since the named version are at most
        :data:`REBASE_MAX_CHANGES` and the ops commute with all of them."""
        since = self.since_version(cmd.ref, current, cmd.precondition.if_match, REBASE_MAX_CHANGES)
        if since is None:
            raise EtagMismatch(
                "If-Match names no version among the last "
                f"{REBASE_MAX_CHANGES} changes; refetch and retry.",
                latest_etag=current.etag,
                rebase={"reason": "base version not found"},
            )
        found = conflict(cmd.ops, since, current.document, dict(binding.initial_content))
        if found is not None:
            raise EtagMismatch(
                "The document changed since If-Match in a way these ops depend on.",
                latest_etag=current.etag,
                rebase=found.as_json(),
            )

    def since_version(
        self, ref: DocumentRef, current: StoredDocument, etag: str | None, limit: int
    ) -> list[AuditRecord] | None:
        """The committed changes made after the version with ``etag`` (None: after the
        document did not exist), newest first; None if that version is not among the
        last ``limit`` changes."""
        since: list[AuditRecord] = []
        for record in self._audit.chain(ref, current.document.get("change_id")):
            since.append(record)
            if record.pre_etag == etag:
                return since
            if len(since) >= limit:
                return None
        return None

    def committed_response(self, ref: DocumentRef, change_id: str) -> Response | None:
        """The response of ``change_id`` if it reached the document, else None.

        The audit record is written first, so without it nothing landed. With it, the
        change landed iff it follows its own base on the document's chain; the walk stops
        at that base, so it costs the changes made since, not the whole history."""
        own = self._audit.read(ref.tenant_id, ref.user_id, change_id)
        current = self.load(ref) if own is not None else None
        if own is None or current is None:
            return None
        head = current.document.get("change_id")
        later = self._audit.since(ref, head, own.prev_change_id)
        if not later or later[-1].change_id != change_id:
            return None
        if len(later) == 1:
            return write_response(own, current.etag, current.document)
        history = list(self._audit.chain(ref, head))  # rare: rebuild the state back then
        if history[-1].prev_change_id is not None:  # retention removed the start
            return _without_document(write_response(own, later[-2].pre_etag, {}))
        document = fold(reversed(history[len(later) - 1 :])) or {}
        return write_response(own, later[-2].pre_etag, document)

    def sweep_orphans(self, tenant_id: str, user_id: str, min_age: timedelta) -> list[str]:
        """Delete audit records no document reached that are older than ``min_age``;
        return their change ids."""
        prefix = f"{user_prefix(tenant_id, user_id)}documents/"
        heads = {name: self._head(name) for name in self._blobs.list_names(prefix)}
        cutoff = self._clock.now() - min_age
        stale = [
            c for c in self._audit.orphans(tenant_id, user_id, heads) if change_time(c) <= cutoff
        ]
        for change_id in stale:
            self._blobs.delete(audit_name(tenant_id, user_id, change_id))
        return stale

    def _head(self, blob_name: str) -> str | None:
        head = json.loads(self._blobs.read(blob_name).data).get("change_id")
        return head if isinstance(head, str) else None


@dataclass(frozen=True)
class HistoryPage:
    """One page of a document's history (spec 19.2, 25.6): each change its audit record
    as stored plus the derived ``post_etag``; ``next_before`` names the next page."""

    etag: str
    changes: tuple[Json, ...]
    next_before: str | None
    truncated: bool = False  # older changes were removed by retention

    def as_json(self) -> Json:
        found = {"etag": self.etag, "changes": list(self.changes), "next_before": self.next_before}
        return {**found, "truncated": True} if self.truncated else found


def write_response(
    record: AuditRecord, etag: str | None, document: dict[str, Any], unchanged: bool = False
) -> Response:
    """What a write answers (and its idempotency record keeps): the document after
    ``record``, its ETag, what was redirected, whether it was created."""
    body: dict[str, Any] = {"etag": etag, "document": document}
    if record.redirected_ops:
        body["redirected_ops"] = record.redirected_ops
    if record.upserts:
        body["upserts"] = record.upserts
    if record.rebased:
        body["rebased_from"] = record.rebased_from
    if unchanged:
        body["unchanged"] = True
    return Response(record.operation == "create", body)


def _without_document(response: Response) -> Response:
    """A landed change whose document cannot be rebuilt any more (its earlier history
    is past the audit horizon): the response says so instead of showing a wrong one."""
    return replace(response, body={**response.body, "document": None, "history_truncated": True})
