"""The document capability (spec 10.1-10.3, 12, 14): read, patch, replace, history.

A write is decided here (governed: resolved, planned, applied, validated) and stored by
:class:`memnet.services.documents.write_path.WritePath`, which holds the order of its
storage writes (claim, audit, document, complete) and why a crash between any two
loses nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from memnet.domain import sensitivity_answers as view_answers
from memnet.domain import sensitivity_views as views
from memnet.domain import upsert
from memnet.domain.audit_records import AuditRecord
from memnet.domain.bindings import Binding
from memnet.domain.callers import Caller
from memnet.domain.document_model import StoredDocument, WriteCommand
from memnet.domain.envelope import Json, serialise
from memnet.domain.errors import Conflict, EtagMismatch, MemnetError, NotFound, Unprocessable
from memnet.domain.governed import Governed
from memnet.domain.layout import DocumentRef
from memnet.domain.migrations import Migrated
from memnet.domain.patching import Op
from memnet.domain.pointers import Segments
from memnet.domain.policy import (
    WriteIntent,
    change_violations,
    plan_ops,
)
from memnet.domain.sensitivity import SensitivityRules
from memnet.domain.timestamps import format_millis
from memnet.domain.validation import TOO_DEEP, document_violations, raise_if_any
from memnet.ports import BlobStore, Clock
from memnet.services import telemetry
from memnet.services.documents import diffs
from memnet.services.documents.audit import AuditLog
from memnet.services.documents.chain import DocumentChain, HistoryPage, write_response
from memnet.services.documents.diffs import Diff
from memnet.services.documents.idempotency import Claim, IdempotencyStore, Response, Ticket
from memnet.services.documents.scopes import (
    scoped_ref,
    scoped_write,
    visible_changes,
    visible_history,
)
from memnet.services.documents.versions import Version, Versions
from memnet.services.documents.why import Why, explain, origins
from memnet.services.documents.write_path import AfterCommit, Change, LostRace, WritePath
from memnet.services.documents.write_records import (
    EXTENDS_EXPIRY,
    REVIEWER_ROLES,
    STORED_PATHS,
    audit_record,
    base_of,
    id_stamps,
    live_holds,
    proposer_checks,
    target_checks,
)
from memnet.services.forget.tombstones import Tombstones
from memnet.services.profiles.registry import ProfileRegistry
from memnet.services.records import retrying


class DocumentService:
    def __init__(
        self,
        *,
        blobs: BlobStore,
        registry: ProfileRegistry,
        audit: AuditLog,
        idempotency: IdempotencyStore,
        clock: Clock,
        tombstones: Tombstones | None = None,
        after_commit: AfterCommit | None = None,
    ) -> None:
        self._registry, self._idempotency, self._clock = registry, idempotency, clock
        self._tombstones = tombstones  # None only for a service built alone in a test
        self._chain = DocumentChain(blobs, audit, clock)
        self.versions = Versions(blobs, audit)
        self._audit = audit
        self._path = WritePath(
            blobs=blobs,
            audit=audit,
            idempotency=idempotency,
            chain=self._chain,
            clock=clock,
            after_commit=after_commit,
        )
        self._turns = [threading.Lock() for _ in range(64)]

    # -- reads ---------------------------------------------------------------------

    def read(self, caller: Caller, ref: DocumentRef, profile_id: str | None) -> StoredDocument:
        caller.require(ref.tenant_id, "read")
        governed = self.resolve(caller, ref, profile_id, None)
        stored = self._require(scoped_ref(ref, governed.binding))
        stored = self._registry.as_read(governed.binding, stored)
        if governed.rules is None:
            return stored
        return StoredDocument(stored.etag, views.seen(stored.document, caller, governed.rules))

    def history(
        self,
        caller: Caller,
        ref: DocumentRef,
        profile_id: str | None,
        limit: int,
        before: str | None = None,
    ) -> HistoryPage:
        """Committed changes of one document, newest first, a page at a time (spec 19.2,
        25.6): ``before`` is the ``next_before`` of the previous page."""
        governed, ref = self._past(caller, ref, profile_id)
        page = self._chain.page(ref, self._require(ref), limit, before)
        return visible_history(page, caller, governed.binding)

    def version(self, caller: Caller, ref: DocumentRef, profile_id: str | None, at: str) -> Version:
        """The document as it was after a change, or at an instant (``as_of``; docs/
        decisions.md "Versions of a document"): read as its history is, in full."""
        ref = self._past(caller, ref, profile_id)[1]
        return self.versions.at(ref, self._require(ref), at)

    def diff(
        self, caller: Caller, ref: DocumentRef, profile_id: str | None, older: str, newer: str
    ) -> Diff:
        """The RFC 6902 operations from one version to another (``:diff``), read as
        :meth:`version` reads one."""
        ref = self._past(caller, ref, profile_id)[1]
        return diffs.diff(self.versions, ref, self._require(ref), older, newer)

    def _past(
        self, caller: Caller, ref: DocumentRef, profile_id: str | None
    ) -> tuple[Governed, DocumentRef]:
        """What reading a document's past needs (history, versions, diffs, why): the ``read``
        role and a caller who sees every sensitivity class; the binding's rules and
        where the document lives."""
        caller.require(ref.tenant_id, "read")
        governed = self.resolve(caller, ref, profile_id, None)
        views.require_full(caller, governed.rules)
        return governed, scoped_ref(ref, governed.binding)

    def why(
        self,
        caller: Caller,
        ref: DocumentRef,
        profile_id: str | None,
        path: str,
        as_of: str | None = None,
    ) -> Why:
        """The changes that produced the value at ``path`` of the content, now or in the
        version ``as_of`` (``:why``; docs/decisions.md "Why a value is there"): read as
        history is, shown as history is."""
        governed, scoped = self._past(caller, ref, profile_id)
        current = self._require(scoped)
        found = explain(self.versions, self._audit, scoped, current, path, as_of)
        return replace(found, changes=visible_changes(found.changes, caller, governed.binding))

    def origins(
        self, ref: DocumentRef, shown: Json, paths: Iterable[Segments]
    ) -> dict[str, Json] | None:
        """Where each value at ``paths`` of the content of ``shown`` (a version of the
        document at ``ref``, where it lives) came from, or None when ``shown`` is no
        stored version (:func:`memnet.services.documents.why.origins`): for context
        assembly's ``provenance``, which has checked the caller may see it."""
        current = self.load(ref)
        if current is None:
            return None
        return origins(self.versions, self._audit, ref, current, shown, paths)

    def load(self, ref: DocumentRef) -> StoredDocument | None:
        """The document, or None if it does not exist or has expired."""
        return self._chain.live(ref)

    def _require(self, ref: DocumentRef) -> StoredDocument:
        current = self.load(ref)
        if current is None:
            raise NotFound("Document does not exist.", code="DOCUMENT_NOT_FOUND")
        return current

    def resolve(
        self, caller: Caller, ref: DocumentRef, profile_id: str | None, binding_id: str | None
    ) -> Governed:
        """The profile the caller may use, the binding that covers ``ref`` and its rules:
        once per request, handed down as one value."""
        profile = self._registry.for_caller(caller, profile_id)
        found = profile.resolve(ref.namespace, ref.path)
        if found is None:
            raise NotFound(
                "No binding of this profile covers this document.",
                code="BINDING_NOT_FOUND",
                profile_id=profile.profile_id,
            )
        if binding_id is not None and binding_id != found[0].binding_id:
            raise Unprocessable(
                "binding_id does not cover this namespace and path.",
                code="BINDING_MISMATCH",
                expected=found[0].binding_id,
            )
        return Governed.of(profile, found[0])

    # -- writes --------------------------------------------------------------------

    def patch(self, caller: Caller, cmd: WriteCommand) -> Response:
        caller.require(cmd.ref.tenant_id, "write")
        self._check_tombstone(cmd.ref)
        governed = self.resolve(caller, cmd.ref, cmd.profile_id, cmd.binding_id)
        cmd = scoped_write(caller, cmd, governed.binding)
        ids = (governed.profile.profile_id, governed.binding.binding_id)
        try:
            attempt = partial(self._patch, caller, cmd, governed)
            response = self._path.run(caller.caller_id, cmd, attempt)
        except (EtagMismatch, Unprocessable, Conflict) as error:
            if outcome := _failed_outcome(error):
                telemetry.patch_outcome(outcome, *ids)
            raise
        telemetry.patch_outcome(_outcome(response), *ids)
        written = None if cmd.reason in STORED_PATHS else cmd.ops
        return _viewed(response, caller, governed.rules, written)

    def replace(self, caller: Caller, cmd: WriteCommand) -> Response:
        caller.require(cmd.ref.tenant_id, "admin")
        self._check_tombstone(cmd.ref)
        governed = self.resolve(caller, cmd.ref, cmd.profile_id, cmd.binding_id)
        views.require_full(caller, governed.rules, "Replacing a document")
        cmd = scoped_write(caller, cmd, governed.binding, admin_replace=True)
        attempt = partial(self._replace, caller, cmd, governed)
        response = self._path.run(caller.caller_id, cmd, attempt)
        return _viewed(response, caller, governed.rules)

    def _check_tombstone(self, ref: DocumentRef) -> None:
        """409 while the user is being (or was just) forgotten (spec 17)."""
        if self._tombstones is not None:
            self._tombstones.check(ref.tenant_id, ref.user_id)

    def _patch(
        self, caller: Caller, cmd: WriteCommand, governed: Governed, ticket: Ticket
    ) -> Response:
        """One attempt; with ``rebase``, a write that loses the race to another writer
        between reading the latest version and writing is rebased again, up to
        :data:`REBASE_ATTEMPTS` times in all."""
        if any(op.reads() for op in cmd.ops):  # test, copy and move show the document
            caller.require(cmd.ref.tenant_id, "read")
        if not cmd.rebase:
            return self._patch_once(caller, cmd, governed, ticket)
        # Rebasing writers of one document in this process take turns: they would only
        # make each other lose races. Other processes still race, and the ETag decides.
        # A turn not had within TURN_WAIT_SECONDS (a slow store) is skipped: racing is
        # still correct, only slower.
        turn = self._turns[hash(cmd.ref.blob_name) % len(self._turns)]
        taken = turn.acquire(timeout=TURN_WAIT_SECONDS)
        try:
            once = partial(self._patch_once, caller, cmd, governed, ticket)
            return retrying(once, on=LostRace, attempts=REBASE_ATTEMPTS)
        finally:
            if taken:
                turn.release()

    def preview(self, caller: Caller, cmd: WriteCommand) -> Response:
        """What :meth:`patch` would answer now, checked the same way but written nowhere
        (no idempotency claim, no audit record, no document; the ETag is None)."""
        caller.require(cmd.ref.tenant_id, "write")
        governed = self.resolve(caller, cmd.ref, cmd.profile_id, cmd.binding_id)
        cmd = scoped_write(caller, cmd, governed.binding)
        ticket = Ticket("", "", Claim("", "pending", "", "chg_preview", "", ""))
        response = self._patch_once(caller, cmd, governed, ticket, write=False)
        return _viewed(response, caller, governed.rules, cmd.ops)

    def _patch_once(
        self,
        caller: Caller,
        cmd: WriteCommand,
        governed: Governed,
        ticket: Ticket,
        write: bool = True,
    ) -> Response:
        binding, rules = governed.binding, governed.rules
        partial = not views.sees_all(caller, rules) and cmd.reason not in STORED_PATHS
        if partial and cmd.rebase and not views.appends_only(cmd.ops):
            # the check compares the ops with the stored changes since: for any op but an
            # append it would tell which hidden items changed
            cmd = replace(cmd, rebase=False)
        current, expired_etag = self._chain.checked_current(cmd, binding)
        current, migration = self._migrated(binding, current)
        reviewer = bool(caller.roles & REVIEWER_ROLES) or cmd.reason not in EXTENDS_EXPIRY
        start = current.document.get("content") if current else binding.initial_content
        ops_in = cmd.ops
        if partial and rules is not None:  # written against a view
            ops_in = views.stored_ops(cmd.ops, start, caller, rules)
        holds = cmd.holds or live_holds(governed, caller, cmd, ops_in)
        intent = WriteIntent(
            caller.caller_id, self._now(), cmd.confidence, cmd.evidence, reviewer, holds
        )
        try:
            return self._planned(
                caller,
                cmd,
                ops_in,
                governed,
                (ticket, intent),
                (current, expired_etag, migration),
                write,
            )
        except MemnetError as error:
            if ops_in is not cmd.ops:  # answer in the caller's paths, not the stored ones
                view_answers.show_error(error, cmd.ops, ops_in)
            raise

    def _planned(
        self,
        caller: Caller,
        cmd: WriteCommand,
        ops_in: list[Op],
        governed: Governed,
        written: tuple[Ticket, WriteIntent],
        found: tuple[StoredDocument | None, str | None, Migrated | None],
        write: bool,
    ) -> Response:
        """:meth:`_patch_once` after the ops are in stored paths: plan, apply, commit."""
        profile, binding = governed.profile, governed.binding
        (ticket, intent), (current, expired_etag, migration) = written, found
        content = current.document.get("content") if current else None
        planned = plan_ops(profile, binding, ops_in, intent, content)
        raise_if_any(planned.violations)
        start = content if current else binding.initial_content
        hidden = views.hidden_items(caller, governed.rules)
        ops, upserts = upsert.plan(
            binding.item_identity, start, planned.ops, binding.max_chars, hidden
        )
        base = None if current else base_of(binding, None, dict(binding.initial_content))
        applied = [op.as_json() for op in ops]
        record = replace(
            audit_record(caller, cmd, governed, ticket, current, applied, base, self._now_at()),
            redirected_ops=planned.redirected,
            upserts=upserts or None,
            origin=cmd.origin,
            reason_codes=cmd.reason_codes,
            # moved past the version the caller named (None: created meanwhile)
            rebased=current is not None and current.etag != cmd.precondition.if_match,
            rebased_from=cmd.precondition.if_match,
        )
        return self._commit(
            caller, cmd.ref, governed, current, record, write, expired_etag, migration
        )

    def _replace(
        self, caller: Caller, cmd: WriteCommand, governed: Governed, ticket: Ticket
    ) -> Response:
        current, expired_etag = self._chain.checked_current(cmd, None)
        base = base_of(governed.binding, current, cmd.content or {})
        record = audit_record(caller, cmd, governed, ticket, current, [], base, self._now_at())
        return self._commit(caller, cmd.ref, governed, current, record, True, expired_etag)

    def _commit(
        self,
        caller: Caller,
        ref: DocumentRef,
        governed: Governed,
        current: StoredDocument | None,
        record: AuditRecord,
        write: bool = True,
        expired_etag: str | None = None,
        migration: Migrated | None = None,
    ) -> Response:
        """Validate, then (unless ``write`` is False) write the audit record and the
        document. A write that leaves
        the content as it was writes nothing, if the caller may read the document: for a
        write-only caller the unchanged ETag would tell whether it guessed a value.
        ``migration``: ``current`` is the stored version migrated in memory, and the
        record stores the migration's ops before its own (so it folds from the stored)."""
        profile, binding, rules = governed.profile, governed.binding, governed.rules
        reader = caller.may_read()
        before = current.document if current else None
        document = record.apply(before, binding.max_chars)
        if (
            reader
            and current is not None
            and migration is None
            and _same_content(current.document, document)
        ):
            return write_response(record, current.etag, current.document, unchanged=True)
        old = (before or {}).get("content", binding.initial_content)
        pending = profile.confidence.pending_sections.get(binding.binding_id)
        views.check_write(old, document["content"], caller, rules, pending)  # before any echo
        record, document = self._stamped(ref, governed, before, record, document)
        text = _serialised(document)  # what is stored, and what max_chars counts
        new = document["content"]
        validator = self._registry.validator(binding)
        found = document_violations(document, binding, validator, len(text))
        found = found or change_violations(profile, binding, before or {}, document)
        found = found or proposer_checks(profile, binding, record, before, document, self._now_at())
        found = found or views.indexed_targets((old, new), pending, caller, rules)
        seen = views.content_seen(new, caller, rules)
        found = found or target_checks(profile, binding, record, (old, new, seen))
        raise_if_any(view_answers.shown_violations(found, (old, new), caller, rules))
        if migration is not None:
            record = replace(
                record.with_ops([*migration.ops, *record.ops]), migration=migration.as_json()
            )
        if not write:
            return write_response(record, None, document)
        return self._path.store(
            Change(ref, governed, current, expired_etag, record, document, text)
        )

    def _stamped(
        self,
        ref: DocumentRef,
        governed: Governed,
        before: dict[str, Any] | None,
        record: AuditRecord,
        document: dict[str, Any],
    ) -> tuple[AuditRecord, dict[str, Any]]:
        """``record`` and ``document`` with a new id on each pending item that needs one,
        the ops that set them appended to the record's."""
        profile, binding = governed.profile, governed.binding
        old = (before or {}).get("content", binding.initial_content)
        stamps = id_stamps(profile, binding, ref, (old, document["content"]))
        if not stamps:
            return record, document
        record = record.with_ops([*record.ops, *stamps])
        return record, record.apply(before, binding.max_chars)

    def committed_response(self, ref: DocumentRef, change_id: str) -> Response | None:
        return self._chain.committed_response(ref, change_id)

    def sweep_orphans(self, tenant_id: str, user_id: str, min_age: timedelta) -> list[str]:
        """Delete audit records no document reached that are older than ``min_age``, and
        never younger than the idempotency lease (a younger one may belong to a write
        still in flight); return their change ids."""
        return self._chain.sweep_orphans(tenant_id, user_id, max(min_age, self._idempotency.lease))

    def _migrated(
        self, binding: Binding, current: StoredDocument | None
    ) -> tuple[StoredDocument | None, Migrated | None]:
        """The version a write starts from: ``current`` migrated in memory to the
        binding's schema version when it is at an older one (the migration becomes part
        of the change); a 422 when it cannot be (docs/profiles.md, "Schema migrations")."""
        migration = None if current is None else self._registry.migrated(binding, current.document)
        if current is None or migration is None:
            return current, None
        return StoredDocument(current.etag, migration.document), migration

    def _now(self) -> str:
        return format_millis(self._clock.now())

    def _now_at(self) -> datetime:
        return self._clock.now()


REBASE_ATTEMPTS = 8


TURN_WAIT_SECONDS = 2.0


def _viewed(
    response: Response,
    caller: Caller,
    rules: SensitivityRules | None,
    written: list[Op] | None = None,
) -> Response:
    """``response`` as ``caller`` may see it (every path: written, replayed, settled after
    a lost response); ``written``: the caller's own ops, whose paths the answer names."""
    if rules is None:
        return response
    return replace(response, body=view_answers.shown_body(response.body, caller, rules, written))


def _serialised(document: dict[str, Any]) -> str:
    try:
        return serialise(document)
    except RecursionError as exc:  # chained ops nested values deeper than the encoder goes
        raise Unprocessable(TOO_DEEP.message, code=TOO_DEEP.code) from exc


def _same_content(before: dict[str, Any], after: dict[str, Any]) -> bool:
    """Whether a write leaves the content as it was (compared as JSON text: ``1`` and
    ``true`` differ); such a write creates no version (only ``test`` ops, say)."""
    return serialise(before.get("content")) == serialise(after.get("content"))


def _outcome(response: Response) -> str:
    """The ``memnet.patch.outcomes`` outcome of a PATCH that answered 200: one per request."""
    if response.replayed:
        return "idempotent_replay"  # the stored response of an earlier request
    return "redirected" if response.body.get("redirected_ops") else "applied"


def _failed_outcome(error: Exception) -> str | None:
    """The outcome of a PATCH that failed; None for a conflict that is not one (a key in
    progress, a forget under way)."""
    if isinstance(error, EtagMismatch):
        return "etag_mismatch"
    if isinstance(error, Unprocessable):
        return "validation_failed"
    reused = isinstance(error, Conflict) and error.code == "IDEMPOTENCY_KEY_REUSED"
    return "idempotency_conflict" if reused else None
