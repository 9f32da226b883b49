"""The documents phase of forget-conversation: retract what the conversation taught from
each of the user's documents (:mod:`memnet.domain.retraction`), one audited write per
changed document.

Each write goes through :meth:`~memnet.services.documents.service.DocumentService.patch` as
``memnet-forget`` (reason ``forget_conversation``, confidence 1.0, evidence naming the
job, If-Match, an idempotency key derived from the job and the document's change id).
It is recorded in the job's state first (``pending_write``), so a rerun re-issues the
identical request and the idempotency key answers it; a 412 drops the record and the
document is planned again from its latest version. A binding a patch may not write is
retracted by an admin replace instead.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from memnet.domain.callers import ANY, FULL_CLEARANCE, Caller
from memnet.domain.document_model import Precondition, StoredDocument, WriteCommand
from memnet.domain.envelope import canonical
from memnet.domain.errors import BadRequest, EtagMismatch, Forbidden, NotFound, Unprocessable
from memnet.domain.layout import DocumentRef, user_prefix
from memnet.domain.patching import apply_ops, parse_ops
from memnet.domain.retraction import points_at, retract
from memnet.ports import BlobNotFound, BlobStore
from memnet.services.documents.expiry import DocumentExpiry, document_ref
from memnet.services.documents.idempotency import Response
from memnet.services.documents.service import DocumentService
from memnet.services.forget.job import ForgetJob, PlannedWrite
from memnet.services.forget.ledger import FORGET_CALLER, Job, JobStore
from memnet.services.profiles.registry import ProfileRegistry
from memnet.services.records import retrying


def forget_caller(tenant_id: str) -> Caller:
    """The job's own identity: it rewrites documents of any profile, admin included (a
    binding only an admin may replace is retracted by a replace)."""
    return Caller(
        FORGET_CALLER,
        frozenset({tenant_id}),
        frozenset({ANY}),
        frozenset({"read", "write", "admin"}),
        clearance=FULL_CLEARANCE,
    )


class DocumentRetraction:
    def __init__(
        self,
        documents: DocumentService,
        registry: ProfileRegistry,
        blobs: BlobStore,
        jobs: JobStore,
        expiry: DocumentExpiry | None = None,
    ) -> None:
        self._documents, self._registry, self._blobs, self._jobs = documents, registry, blobs, jobs
        self._expiry = expiry  # an expired document is deleted, not retracted from

    def run(self, job: Job, deadline: float) -> tuple[Job, bool]:
        """Retract from each document in turn (a cursor remembers the last one done);
        ``(job, False)`` when out of time."""
        if job.state.pending_write:
            job, _ = self._write(job)
        state = job.state
        prefix = user_prefix(state.tenant_id, state.user_id) + "documents/"
        for name in names_after(self._blobs, prefix, state.documents_after):
            job = self._retract_one(job, name)
            if time.monotonic() >= deadline:
                return job, False
        return job, True

    def _retract_one(self, job: Job, name: str) -> Job:
        """Plan and write until the document holds nothing to retract (a 412 plans again
        from the latest version), or the write is refused for good (recorded in
        ``not_retracted``); only then does the cursor move past it. A document that
        keeps changing raises :class:`DocumentBusy`: the job tries it again later. An
        expired document (it reads as absent, so nothing would be retracted from it) is
        deleted now rather than at the next retention sweep."""
        self._expire_if_due(name)
        latest = [job]

        def attempt() -> None:
            planned = self._plan(latest[0].state, name)
            if planned is None:
                return
            recorded = self._jobs.save(latest[0], replace(latest[0].state, pending_write=planned))
            latest[0], outcome = self._write(recorded)
            if outcome != "refused":
                raise _PlanAgain  # written, or lost to another writer: plan again

        try:
            retrying(attempt, on=_PlanAgain)
        except _PlanAgain:
            raise DocumentBusy(name) from None
        return replace(latest[0], state=replace(latest[0].state, documents_after=name))

    def _expire_if_due(self, name: str) -> None:
        ref = document_ref(name)
        if self._expiry is None or ref is None:
            return
        try:
            blob = self._blobs.read(name)
        except BlobNotFound:
            return
        self._expiry.expire(ref, StoredDocument(blob.etag, json.loads(blob.data)), FORGET_CALLER)

    def _plan(self, state: ForgetJob, name: str) -> PlannedWrite | None:
        relative = name[len(user_prefix(state.tenant_id, state.user_id)) :]
        namespace, _, path = relative.removeprefix("documents/").partition("/")
        ref = DocumentRef(state.tenant_id, state.user_id, namespace, path)
        current = self._documents.load(ref)
        if current is None:
            return None
        profile_id = self._profile_of(ref, current.document)
        current = self._as_written(ref, profile_id, current)
        matches = points_at(state.tenant_id, state.user_id, state.conversation_id)
        found = retract(current.document.get("content"), matches)
        if not found.ops:
            return None
        base = current.document.get("change_id") or current.etag
        key = f"forget-conversation:{state.forget_id}:{base}"
        ops, removed, kept = found.ops, found.removed, found.kept
        return PlannedWrite(namespace, path, current.etag, ops, key, profile_id, removed, kept)

    def _as_written(
        self, ref: DocumentRef, profile_id: str | None, current: StoredDocument
    ) -> StoredDocument:
        """``current`` as a write of its binding starts from, migrated in memory when it
        is at an older schema version (docs/profiles.md, "Schema migrations"): the
        retraction is planned against the content its patch applies to."""
        profile = self._registry.get(profile_id) if profile_id else None
        found = profile.resolve(ref.namespace, ref.path) if profile else None
        return current if found is None else self._registry.as_written(found[0], current)

    def _profile_of(self, ref: DocumentRef, document: dict[str, Any]) -> str | None:
        for profile_id in self._registry.profile_ids():
            profile = self._registry.get(profile_id)
            found = profile.resolve(ref.namespace, ref.path) if profile else None
            if found and found[0].shared:
                continue  # a user's copy of a binding since made shared: no patch reaches it
            if found and found[0].schema_id == document.get("schema_id"):
                return profile_id
        return None

    def _write(self, job: Job) -> tuple[Job, str]:
        """Issue the recorded write (again, on a rerun: the key answers it). Outcome:
        ``written``; ``lost`` (412: the record is dropped and the document planned
        afresh); ``refused`` (a write no retry can fix — no profile binds it, or the
        result would not validate — recorded in ``not_retracted`` with its code)."""
        state, planned = job.state, job.state.pending_write
        assert planned is not None
        ref = DocumentRef(state.tenant_id, state.user_id, planned.namespace, planned.path)
        state = replace(state, pending_write=None)
        try:
            response = self._patch_or_replace(forget_caller(state.tenant_id), ref, planned, state)
        except EtagMismatch:
            return self._jobs.save(job, state), "lost"
        except (BadRequest, NotFound, Forbidden, Unprocessable) as refused:
            failed = {"namespace": ref.namespace, "path": ref.path, "code": refused.code}
            state = replace(state, not_retracted=(*state.not_retracted, failed))
            return self._jobs.save(job, state), "refused"
        document = response.body.get("document") or {}
        entry = {
            "namespace": ref.namespace,
            "path": ref.path,
            "change_id": document.get("change_id"),
            "removed": planned.removed,
            "kept_without_pointer": planned.kept,
        }
        return self._jobs.save(job, replace(state, retracted=(*state.retracted, entry))), "written"

    def _patch_or_replace(
        self, caller: Caller, ref: DocumentRef, planned: PlannedWrite, state: ForgetJob
    ) -> Response:
        command = WriteCommand(
            ref=ref,
            profile_id=planned.profile_id,
            binding_id=None,
            precondition=Precondition(if_match=planned.etag),
            idempotency_key=planned.key,
            fingerprint=hashlib.sha256(canonical(planned.ops)).hexdigest(),
            reason="forget_conversation",
            request_id=state.forget_id,
            evidence={"job": "forget_conversation", "forget_id": state.forget_id},
            confidence=1.0,
            ops=parse_ops(planned.ops),
        )
        try:
            return self._documents.patch(caller, command)
        except Unprocessable:  # a path this profile does not let a patch write
            current = self._documents.load(ref)
            if current is None or current.etag != planned.etag:
                raise EtagMismatch("Document changed.") from None
            current = self._as_written(ref, planned.profile_id, current)
            content = apply_ops(current.document, command.ops)["content"]
            return self._documents.replace(caller, _replacing(command, content))


class _PlanAgain(Exception):
    """A retraction round wrote (or lost its write): the document is planned again."""


class DocumentBusy(Exception):
    """A document changed under every attempt to retract from it; try again later."""


def names_after(blobs: BlobStore, prefix: str, cursor: str) -> Iterator[str]:
    """Names under ``prefix`` after ``cursor``, in lexical order (resuming a scan)."""
    return (n for n in blobs.list_names(prefix) if n > cursor)


def _replacing(command: WriteCommand, content: dict[str, Any]) -> WriteCommand:
    return replace(
        command,
        ops=[],
        content=content,
        idempotency_key=command.idempotency_key + ":replace",
        fingerprint=hashlib.sha256(canonical(content)).hexdigest(),
    )
