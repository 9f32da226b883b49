"""What a document write records and which writes are held to which rules: the audit
record (spec 19.2) a change is made of, and the reasons that move a short-lived
document's expiry or are checked for their proposals' proposer
(:mod:`memnet.services.documents.service` uses them)."""

from __future__ import annotations

import secrets
import uuid
from datetime import datetime
from typing import Any

from memnet.domain import guard, pointers, proposals
from memnet.domain.audit_records import AuditRecord, ops_sha256
from memnet.domain.bindings import Binding
from memnet.domain.callers import Caller
from memnet.domain.document_model import StoredDocument, WriteCommand
from memnet.domain.envelope import CONTENT, EXPIRES_AT
from memnet.domain.errors import Unprocessable
from memnet.domain.expiry import expires_at
from memnet.domain.governed import Governed
from memnet.domain.layout import DocumentRef, user_prefix
from memnet.domain.patching import Op
from memnet.domain.policy import Violation
from memnet.domain.profiles import Profile
from memnet.domain.proposal_queue import target_problem
from memnet.domain.timestamps import format_millis
from memnet.services.documents.idempotency import Ticket, key_hash

# Writes that use a short-lived document and so move its expiry; a job's (compaction,
# a freshness downgrade, a forget's retraction) keeps the one it found.
EXTENDS_EXPIRY = frozenset({"live_update", "replay_update", "admin_migration", "proposal_review"})
PROPOSER_CHECKED = frozenset({"live_update", "replay_update"})  # callers' and replay's patches
STORED_PATHS = frozenset({"proposal_review"})  # the service computed these ops' paths itself
REVIEWER_ROLES = frozenset({"review", "admin"})  # write durable sections under review_required
# the bulk schema migration's changes (an admin_migration, not a use: keeps the expiry)
MIGRATION_ORIGIN = {"job": "migrate"}


def live_holds(
    governed: Governed, caller: Caller, cmd: WriteCommand, ops: list[Op]
) -> dict[int, tuple[str, ...]]:
    """What the poisoning guard holds of a caller's PATCH that asserts confidence or
    evidence (an agent's inference, as MCP ``remember`` writes): the ops whose value is
    instruction- or secret-like. A reviewer's or admin's write, and a plain application
    write (neither), are not guarded. Evidence naming another user's or tenant's snapshot
    is refused, ``EVIDENCE_MISMATCH``."""
    profile, binding = governed.profile, governed.binding
    rules = profile.guard
    asserted = cmd.confidence is not None or cmd.evidence is not None
    if (
        rules is None
        or not asserted
        or cmd.reason != "live_update"
        or caller.roles & REVIEWER_ROLES
    ):
        return {}
    pieces = guard.evidence_pieces([cmd.evidence, *(op.value for op in ops)])
    pieces += [cmd.evidence] if isinstance(cmd.evidence, dict) else []
    owner = user_prefix(cmd.ref.tenant_id, cmd.ref.user_id)
    problem = guard.foreign_evidence(pieces, owner, None)
    if problem is not None:
        raise Unprocessable(f"{problem}.", code="EVIDENCE_MISMATCH")
    pending = profile.confidence.pending_sections.get(binding.binding_id)
    held = {
        op.index: guard.content_holds(rules, op.value)
        for op in ops
        if op.op in ("add", "replace")
        and not (pending is not None and pointers.is_within(op.segments[1:], pending))
    }
    return {index: tuple(reasons) for index, reasons in held.items() if reasons}


def base_of(
    binding: Binding, current: StoredDocument | None, content: dict[str, Any]
) -> dict[str, Any]:
    """The envelope a create or replace starts from (its ``doc_id`` kept on replace)."""
    doc_id = current.document["doc_id"] if current else str(uuid.uuid4())
    return {
        "doc_id": doc_id,
        "schema_id": binding.schema_id,
        "schema_version": binding.schema_version,
        "content": content,
    }


def audit_record(
    caller: Caller,
    cmd: WriteCommand,
    governed: Governed,
    ticket: Ticket,
    current: StoredDocument | None,
    ops: list[dict[str, Any]],
    base: dict[str, Any] | None,
    now: datetime,
) -> AuditRecord:
    """The audit record (spec 19.2 fields plus what replaying it needs)."""
    operation = "create" if current is None else ("replace" if cmd.content is not None else "patch")
    expiry = expires_at(governed.binding, now)
    kept = cmd.reason not in EXTENDS_EXPIRY or cmd.origin == MIGRATION_ORIGIN
    if current is not None and kept:
        expiry = current.document.get(EXPIRES_AT) if expiry is not None else None
    return AuditRecord(
        change_id=ticket.change_id,
        prev_change_id=current.document.get("change_id") if current else None,
        operation=operation,
        ref=cmd.ref,
        binding_id=governed.binding.binding_id,
        profile_id=governed.profile.profile_id,
        actor=caller.caller_id,
        timestamp=format_millis(now),
        reason=cmd.reason,
        pre_etag=current.etag if current else None,
        ops=ops,
        ops_sha256=ops_sha256(ops),
        evidence=cmd.evidence,
        confidence=cmd.confidence,
        base=base,
        request_id=cmd.request_id,
        idempotency_key_sha256=key_hash(caller.caller_id, cmd.idempotency_key),
        expires_at=expiry,
    )


def proposer_checks(
    profile: Profile,
    binding: Binding,
    record: AuditRecord,
    before: dict[str, Any] | None,
    after: dict[str, Any],
    now: datetime,
) -> list[Violation]:
    """Proposals a caller's patch adds must be its own and not future-dated
    (:func:`memnet.domain.proposals.proposer_violations`); jobs and an admin's replace
    (a migration) are not held to it."""
    pending = profile.confidence.pending_sections.get(binding.binding_id)
    if pending is None or record.reason not in PROPOSER_CHECKED:
        return []
    old = (before or {}).get("content")
    found = proposals.proposer_violations(old, after["content"], pending, record.actor, now)
    return [Violation(code, message, path=path) for code, message, path in found]


def target_checks(
    profile: Profile, binding: Binding, record: AuditRecord, contents: tuple[Any, Any, Any]
) -> list[Violation]:
    """Proposals a caller's patch adds must be approvable as made
    (:func:`memnet.domain.proposal_queue.target_problem`): ``contents`` are the content
    before and after the write, and after it as the writer sees it (its view: whether a
    target has a place must not depend on what the writer cannot see)."""
    pending = profile.confidence.pending_sections.get(binding.binding_id)
    if pending is None or record.reason not in PROPOSER_CHECKED:
        return []
    old, new, seen = contents
    found = []
    for index, item in proposals.fresh(old, new, pending):
        problem = target_problem(item, pending, seen)
        if problem is not None:
            path = pointers.render((CONTENT, *pending, str(index), "target_path"))
            found.append(Violation("PROPOSAL_TARGET_INVALID", problem, path=path))
    return found


def id_stamps(
    profile: Profile, binding: Binding, ref: DocumentRef, contents: tuple[Any, Any]
) -> list[dict[str, Any]]:
    """The ops that give each pending item of the content after a write (``contents``:
    before and after) that needs one (:func:`memnet.domain.proposals.stamps`) a new
    random id; they are recorded with the write's own ops, so folding its audit records
    still reproduces the document."""
    pending = profile.confidence.pending_sections.get(binding.binding_id)
    if pending is None:
        return []
    indexes = proposals.stamps(*contents, pending, ref.namespace, ref.path)
    return [
        {
            "op": "add",
            "path": pointers.render((CONTENT, *pending, str(index), proposals.ID_MEMBER)),
            "value": proposals.proposal_id(ref.namespace, ref.path, secrets.token_hex(16)),
        }
        for index in indexes
    ]
