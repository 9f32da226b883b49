"""The bulk schema migration (``memnet migrate``; docs/operations.md, "Schema
migrations"): every document stored at an older schema version than its binding's is
migrated as its own change, reason ``admin_migration``, its audit record naming both
versions (``migration: {from, to}``).

Each write is an empty PATCH through
:meth:`~memnet.services.documents.service.DocumentService.patch`, conditional on the
version read (``If-Match``): the write path migrates the version it starts from, as it
does for every write, so a live write never races a blind overwrite. One that loses
to a live writer reads the document again (the live write has usually migrated it
already) up to :data:`ATTEMPTS` times. Idempotent and resumable: a document at its
binding's version is left alone, so a rerun migrates only what is still old, and the
idempotency key names the version migrated (``migrate:<change_id>``), so a write
repeated after a crash is answered, not made twice.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from memnet.domain.audit_records import ops_sha256
from memnet.domain.callers import ANY, FULL_CLEARANCE, Caller
from memnet.domain.document_model import Precondition, StoredDocument, WriteCommand
from memnet.domain.envelope import Json
from memnet.domain.errors import EtagMismatch, MemnetError
from memnet.domain.layout import DocumentRef
from memnet.ports import BlobStore
from memnet.services.documents.audit import AuditLog
from memnet.services.documents.governing import document_ref, governing
from memnet.services.documents.service import DocumentService
from memnet.services.documents.write_records import MIGRATION_ORIGIN
from memnet.services.profiles.registry import ProfileRegistry
from memnet.services.records import retrying_from

ATTEMPTS = 4
REASON = "admin_migration"


@dataclass(frozen=True)
class Outcome:
    """What the job did with one document: ``migrated``, ``would_migrate`` (a dry run),
    ``current`` (at its binding's version: nothing to do, perhaps since a live write
    migrated it), ``failed`` (left as it was; ``error`` says why) or ``skipped`` (no
    profile governs it)."""

    document: str  # TENANT/USER/NAMESPACE/PATH
    status: str
    from_version: str | None = None
    to_version: str | None = None
    change_id: str | None = None
    error: Json | None = None

    def as_json(self) -> Json:
        found: Json = {"document": self.document, "status": self.status}
        extra: Json = {"from": self.from_version, "to": self.to_version}
        extra |= {"change_id": self.change_id, "error": self.error}
        return found | {k: v for k, v in extra.items() if v is not None}


def job_caller(actor: str, tenant_id: str) -> Caller:
    """The job's identity: writes any profile's documents of one tenant, shared ones
    too (their writers are admins), and sees every sensitivity class."""
    roles = frozenset({"read", "write", "admin"})
    return Caller(actor, frozenset({tenant_id}), frozenset({ANY}), roles, clearance=FULL_CLEARANCE)


class MigrationJob:
    def __init__(
        self,
        *,
        documents: DocumentService,
        registry: ProfileRegistry,
        audit: AuditLog,
        blobs: BlobStore,
    ) -> None:
        self._documents, self._registry = documents, registry
        self._audit, self._blobs = audit, blobs

    def documents(self, tenant_id: str | None = None) -> Iterator[DocumentRef]:
        """Every stored document (of one tenant), in the store's listing order."""
        prefix = "tenants/" if tenant_id is None else f"tenants/{tenant_id}/"
        for name in self._blobs.list_names(prefix):
            ref = document_ref(name)
            if ref is not None:
                yield ref

    def migrate(
        self, ref: DocumentRef, actor: str, profile_id: str | None = None, dry_run: bool = False
    ) -> Outcome | None:
        """Migrate one document if it is at an older version; None when it is gone or
        another profile than ``profile_id`` governs it."""
        stored = self._documents.load(ref)
        if stored is None:
            return None
        name = "/".join((ref.tenant_id, ref.user_id, ref.namespace, ref.path))

        def attempt(stored: StoredDocument) -> Outcome | None:
            return self._attempt(ref, name, stored, (actor, profile_id, dry_run))

        def again(lost: StoredDocument) -> StoredDocument:
            return self._documents.load(ref) or lost

        try:
            return retrying_from(stored, attempt, again, on=EtagMismatch, attempts=ATTEMPTS)
        except EtagMismatch:
            why = f"lost the race to live writers {ATTEMPTS} times; run again"
            return Outcome(name, "failed", error={"code": "ETAG_MISMATCH", "message": why})

    def _attempt(
        self, ref: DocumentRef, name: str, stored: StoredDocument, how: tuple[str, str | None, bool]
    ) -> Outcome | None:
        actor, profile_id, dry_run = how
        found = governing(self._audit, self._registry, ref, stored)
        if found is None:
            return Outcome(name, "skipped", error={"message": "no profile governs it"})
        profile, binding = found
        if profile_id is not None and profile.profile_id != profile_id:
            return None
        stored_version = stored.document.get("schema_version")
        versions: dict[str, Any] = {"from_version": stored_version}
        try:
            migrated = self._registry.migrated(binding, stored.document)
        except MemnetError as error:
            return Outcome(name, "failed", **versions, error=_error(error))
        if migrated is None:
            return Outcome(name, "current", to_version=binding.schema_version)
        versions["to_version"] = migrated.to_version
        if dry_run:
            return Outcome(name, "would_migrate", **versions)
        base = stored.document["change_id"]
        command = WriteCommand(
            ref=ref,
            profile_id=profile.profile_id,
            binding_id=binding.binding_id,
            precondition=Precondition(if_match=stored.etag),
            idempotency_key=f"migrate:{base}",
            fingerprint=ops_sha256(migrated.ops),
            reason=REASON,
            request_id=f"migrate-{base}",
            evidence={"job": "migrate", "base_change_id": base},
            origin=MIGRATION_ORIGIN,
        )
        try:
            response = self._documents.patch(job_caller(actor, ref.tenant_id), command)
        except EtagMismatch:
            raise
        except MemnetError as error:
            return Outcome(name, "failed", **versions, error=_error(error))
        change_id = (response.body.get("document") or {}).get("change_id")
        return Outcome(name, "migrated", **versions, change_id=change_id)


def _error(error: MemnetError) -> Json:
    return {"code": error.code, "message": error.message, **error.details}
