"""Revert and undo (issue 27 item 3; docs/decisions.md "Revert and undo"):
``POST {document}:revert``.

Both are a PATCH: the ops are computed here (:mod:`memnet.domain.undo`) and handed to
:meth:`DocumentService.patch` with reason ``revert``, so every rule a caller's PATCH
meets holds (binding roles, writable and denied paths, limits, today's schema,
sensitivity, the idempotency key, the ETag, a forget in progress), and the change is
one audit record like any other, naming ``reverted_to`` or ``undone``.

- **to a version** (``to_change_id``): ops that set each top-level section that differs
  back to the version's, under the caller's ``If-Match``; a version stored at an older
  schema version is migrated first, as the next write would migrate it;
- **one change** (``undo_change_id``): its inverse, written against the version it
  produced and rebased onto the latest like a live PATCH with ``rebase``
  (:func:`memnet.domain.rebase.conflict`): ``409 UNDO_CONFLICT`` naming the later change
  that touched what it wrote. The caller's ``If-Match`` must name the undone change's
  version or a later one.

Reading the version goes through
:class:`memnet.services.documents.versions.Versions`, so its ``404`` and ``410`` rules are
the point-in-time read's. Who may revert is the binding's ``revert_roles``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memnet.domain import sensitivity_views as views
from memnet.domain.bindings import Binding
from memnet.domain.callers import Caller
from memnet.domain.document_model import Precondition, StoredDocument, WriteCommand
from memnet.domain.errors import Conflict, EtagMismatch, Forbidden, NotFound, Unprocessable
from memnet.domain.governed import Governed
from memnet.domain.layout import DocumentRef
from memnet.domain.patching import parse_ops
from memnet.domain.undo import inverse, restoring
from memnet.services.documents.audit import AuditLog
from memnet.services.documents.chain import REBASE_MAX_CHANGES
from memnet.services.documents.idempotency import Response
from memnet.services.documents.scopes import scoped_ref
from memnet.services.documents.service import DocumentService
from memnet.services.documents.versions import VersionIndex
from memnet.services.forget.tombstones import Tombstones
from memnet.services.profiles.registry import ProfileRegistry

REVERT = "revert"  # the audit record's reason


@dataclass(frozen=True)
class RevertCommand:
    """A ``POST {document}:revert`` after parsing: exactly one of ``to_change_id`` and
    ``undo_change_id``; ``note`` is the caller's ``reason``, kept in the evidence."""

    ref: DocumentRef
    profile_id: str | None
    if_match: str
    idempotency_key: str
    fingerprint: str
    request_id: str
    to_change_id: str | None = None
    undo_change_id: str | None = None
    note: str | None = None


class Reverts:
    def __init__(
        self,
        documents: DocumentService,
        audit: AuditLog,
        registry: ProfileRegistry,
        tombstones: Tombstones | None,
    ) -> None:
        self._documents, self._audit, self._registry = documents, audit, registry
        self._tombstones = tombstones

    def revert(self, caller: Caller, cmd: RevertCommand) -> Response:
        caller.require(cmd.ref.tenant_id, "read")
        if self._tombstones is not None:  # before reading what a forget is deleting
            self._tombstones.check(cmd.ref.tenant_id, cmd.ref.user_id)
        governed = self._documents.resolve(caller, cmd.ref, cmd.profile_id, None)
        _require_revert_role(caller, governed.binding)
        views.require_full(caller, governed.rules, "Reverting a document")
        ref = scoped_ref(cmd.ref, governed.binding)
        current = self._documents.load(ref)
        if current is None:
            raise NotFound("Document does not exist.", code="DOCUMENT_NOT_FOUND")
        index = self._documents.versions.index(ref, current)
        if cmd.undo_change_id is None:
            write = self._back_to(cmd, governed, (ref, current, index))
            return self._documents.patch(caller, write)
        write = self._undo(cmd, governed, (ref, current, index))
        try:
            return self._documents.patch(caller, write)
        except EtagMismatch as error:
            if "rebase" not in error.details:
                raise
            raise _conflict(error) from error

    def _back_to(
        self,
        cmd: RevertCommand,
        governed: Governed,
        found: tuple[DocumentRef, StoredDocument, VersionIndex],
    ) -> WriteCommand:
        ref, current, index = found
        versions, to = self._documents.versions, str(cmd.to_change_id)
        old = versions.document(ref, index, versions.position(ref, index, to))
        migrated = self._registry.migrated(governed.binding, old)  # 422 without a way
        wanted = (migrated.document if migrated else old)["content"]
        now = self._registry.as_written(governed.binding, current).document["content"]
        ops = restoring(now, wanted)
        return _command(cmd, governed, ops, cmd.if_match, reverted_to=to)

    def _undo(
        self,
        cmd: RevertCommand,
        governed: Governed,
        found: tuple[DocumentRef, StoredDocument, VersionIndex],
    ) -> WriteCommand:
        ref, current, index = found
        versions, undone = self._documents.versions, str(cmd.undo_change_id)
        position = versions.position(ref, index, undone)
        record = self._audit.read(ref.tenant_id, ref.user_id, undone)
        if record is None or record.base is not None:
            raise Unprocessable(
                "A create or a replace has no inverse; revert to a version (to_change_id) instead.",
                code="UNDO_NOT_POSSIBLE",
            )
        before = versions.document(ref, index, position - 1)  # 410 past the horizon
        ops = inverse(record.ops, before)
        produced = self._produced(ref, current, (index, position), cmd.if_match)
        return _command(cmd, governed, ops, produced, rebase=True, undone=undone)

    def _produced(
        self,
        ref: DocumentRef,
        current: StoredDocument,
        at: tuple[VersionIndex, int],
        if_match: str,
    ) -> str:
        """The ETag of the version the undone change produced, once ``if_match`` is
        known to name it or a later version: within :data:`REBASE_MAX_CHANGES`, as for
        a rebase."""
        index, position = at
        if len(index.changes) - position - 1 > REBASE_MAX_CHANGES:
            raise Conflict(
                f"More than {REBASE_MAX_CHANGES} changes were made since this change: "
                "revert to a version (to_change_id) instead.",
                code="UNDO_CONFLICT",
                latest_etag=current.etag,
            )
        later = self._audit.since(ref, current.document.get("change_id"), index.changes[position])
        etags = [*(r.pre_etag for r in reversed(later)), current.etag]
        if if_match not in etags:
            raise EtagMismatch(
                "If-Match names no version since the change to undo; refetch and retry.",
                latest_etag=current.etag,
            )
        return str(etags[0])


def _command(
    cmd: RevertCommand,
    governed: Governed,
    ops: list[Any],
    if_match: str,
    rebase: bool = False,
    **named: str,
) -> WriteCommand:
    """The PATCH a revert is. ``confidence`` 1.0 and the revert as evidence: the caller
    holds ``revert_roles`` and chose what to write back, as a reviewer approving a
    proposal does (memnet.services.proposals.review)."""
    evidence = {REVERT: {**named, **({"reason": cmd.note} if cmd.note else {})}}
    return WriteCommand(
        ref=cmd.ref,
        profile_id=cmd.profile_id,
        binding_id=governed.binding.binding_id,
        precondition=Precondition(if_match=if_match),
        idempotency_key=cmd.idempotency_key,
        fingerprint=cmd.fingerprint,
        reason=REVERT,
        request_id=cmd.request_id,
        evidence=evidence,
        confidence=1.0,
        ops=parse_ops(ops),
        rebase=rebase,
        reverted_to=named.get("reverted_to"),
        undone=named.get("undone"),
    )


def _require_revert_role(caller: Caller, binding: Binding) -> None:
    if not caller.roles & binding.revert_roles:
        raise Forbidden(
            f"Reverting binding {binding.binding_id!r} needs one of the roles "
            f"{sorted(binding.revert_roles)}.",
            code="ROLE_FORBIDDEN",
            roles=sorted(binding.revert_roles),
        )


def _conflict(error: EtagMismatch) -> Conflict:
    """A rebase that found a later change touching what the undo writes: 409, naming it."""
    return Conflict(
        "A later change touched what this change wrote: it no longer undoes cleanly.",
        code="UNDO_CONFLICT",
        latest_etag=error.details.get("latest_etag"),
        conflict=error.details["rebase"],
    )
