"""The order of a document write, in one place (spec 12; docs/architecture.md, "One
PATCH, end to end"):

1. **claim** the idempotency key: a create-only record that already names the change id
   this write will use; or answer an earlier identical request's stored response;
2. **decide** the change: read the current version, plan, apply and validate (the
   caller's ``attempt``; nothing is written);
3. **audit**: write the change's audit record, create-only;
4. **document**: write the document under its precondition (``If-Match`` on the version
   read, or create-only), storing the change id;
5. **complete** the key with the response.

A crash between any two steps loses nothing and applies nothing twice: an audit record
no document reached is an orphan (never history, swept later); a claim whose change
reached its document is settled from the document by the next request with the key;
one whose change did not is taken over after its lease (docs/decisions.md, "Audit and
history"; tests/faults). A conditional write that fails at 4 discards its audit record
and raises :class:`LostRace`, unless the change landed after all (a lost response the
SDK retried).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from memnet.domain.audit_records import AuditRecord
from memnet.domain.bindings import Binding
from memnet.domain.document_model import StoredDocument, WriteCommand
from memnet.domain.errors import EtagMismatch
from memnet.domain.expiry import expired
from memnet.domain.governed import Governed
from memnet.domain.layout import DocumentRef
from memnet.domain.profiles import Profile
from memnet.ports import BlobStore, Clock, Condition, PreconditionFailed, StorageError
from memnet.services import telemetry
from memnet.services.documents.audit import AuditLog
from memnet.services.documents.chain import DocumentChain, write_response
from memnet.services.documents.idempotency import IdempotencyStore, Replay, Response, Ticket


@dataclass(frozen=True)
class Committed:
    """A write that landed: the document before (None: created) and after."""

    ref: DocumentRef
    profile: Profile
    binding: Binding
    before: dict[str, Any] | None
    after: dict[str, Any]


AfterCommit = Callable[[Committed], None]


@dataclass(frozen=True)
class Change:
    """A decided change (step 2): what to store, and the version it was decided on."""

    ref: DocumentRef
    governed: Governed
    current: StoredDocument | None  # the version read; None: a create
    expired_etag: str | None  # a create over an expired document replaces it under this
    record: AuditRecord
    document: dict[str, Any]  # the document after the change
    text: str  # its serialisation: what is stored


class LostRace(EtagMismatch):
    """Another writer changed the document between our read and our write."""


class OutcomeUnknown(Exception):
    """The document write failed in a way that may or may not have applied it."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class WritePath:
    def __init__(
        self,
        *,
        blobs: BlobStore,
        audit: AuditLog,
        idempotency: IdempotencyStore,
        chain: DocumentChain,
        clock: Clock,
        after_commit: AfterCommit | None = None,
    ) -> None:
        self._blobs, self._audit, self._idempotency = blobs, audit, idempotency
        self._chain, self._clock = chain, clock
        self._after_commit = after_commit  # e.g. queue a compaction; never fails the write

    def run(
        self, caller_id: str, cmd: WriteCommand, attempt: Callable[[Ticket], Response]
    ) -> Response:
        """Steps 1 and 5 around ``attempt`` (steps 2-4, ending in :meth:`store`)."""
        ref = cmd.ref
        claimed = self._idempotency.begin(
            ref.tenant_id,
            ref.user_id,
            caller_id,
            cmd.idempotency_key,
            cmd.fingerprint,
            lambda change_id: self._chain.committed_response(ref, change_id),
        )
        if isinstance(claimed, Replay):
            return self._unexpired(replace(claimed.response, replayed=True))
        try:
            response = attempt(claimed)
        except OutcomeUnknown as unknown:
            response = self._settle(ref, claimed, unknown)
        except Exception:
            self._idempotency.release(claimed)  # nothing reached the document
            raise
        self._idempotency.complete(claimed, response)
        return self._unexpired(response)

    def store(self, change: Change) -> Response:
        """Steps 3 and 4: the audit record, then the document under its precondition."""
        ref, record = change.ref, change.record
        self._audit.write(ref, record)
        try:
            etag = self._write(change)
        except PreconditionFailed as exc:
            return self._lost_race(ref, record, exc)
        except StorageError as exc:
            raise OutcomeUnknown(exc) from exc
        profile, binding = change.governed.profile, change.governed.binding
        before = change.current.document if change.current else None
        self._committed(Committed(ref, profile, binding, before, change.document))
        ratio = len(change.text) / binding.max_chars  # what the binding's limit counts
        telemetry.size_utilisation(ratio, profile.profile_id, binding.binding_id)
        return write_response(record, etag, change.document)

    def _write(self, change: Change) -> str:
        """Write the document under its precondition: the version read, or create-only;
        a create over an expired document replaces it under its ETag, or creates if the
        sweep deleted it meanwhile."""
        name, data = change.ref.blob_name, change.text.encode()
        if change.current is not None:
            etag = self._blobs.write(name, data, Condition.match(change.current.etag))
        elif change.expired_etag is not None:
            # deleted by the sweep (or replaced by another create: refused below)
            try:
                etag = self._blobs.write(name, data, Condition.match(change.expired_etag))
            except PreconditionFailed:
                etag = self._blobs.write(name, data, Condition.create_only())
        else:
            etag = self._blobs.write(name, data, Condition.create_only())
        self._chain.versions.put(name, etag, data)
        return etag

    def _lost_race(self, ref: DocumentRef, record: AuditRecord, exc: Exception) -> Response:
        """A failed conditional write: usually another writer won; but when a response was
        lost and the SDK retried, the first attempt may have landed our own change."""
        landed = self._chain.committed_response(ref, record.change_id)
        if landed is not None:
            return landed
        self._audit.discard(ref, record.change_id)
        latest = self._chain.live(ref)
        message = "Document changed concurrently; refetch and retry."
        raise LostRace(message, latest_etag=latest.etag if latest else None) from exc

    def _settle(self, ref: DocumentRef, ticket: Ticket, unknown: OutcomeUnknown) -> Response:
        """After a document write of unknown outcome: its response if it landed; if it
        did not, release the key and report the error; if storage cannot tell yet, keep
        the claim pending so that a retry settles it (or takes over after the lease)."""
        try:
            landed = self._chain.committed_response(ref, ticket.change_id)
        except StorageError:
            raise unknown.error from unknown
        if landed is None:
            self._idempotency.release(ticket)
            raise unknown.error from unknown
        return landed

    def _unexpired(self, response: Response) -> Response:
        """``response`` without its document if that has expired since: a repeated
        request must not show what a GET no longer does."""
        document = response.body.get("document")
        if isinstance(document, dict) and expired(document, self._clock.now()):
            return replace(response, body={**response.body, "document": None})
        return response

    def _committed(self, change: Committed) -> None:
        """Tell the hook; its failure is logged, never the write's (it has landed)."""
        if self._after_commit is None:
            return
        try:
            self._after_commit(change)
        except Exception:
            log.warning("after-commit hook failed for %s", change.ref.blob_name, exc_info=True)


log = logging.getLogger("memnet.services.documents.write_path")
