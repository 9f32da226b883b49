"""Reviewing proposals (issue 15, capability 4; docs/proposals.md): the pending sections
of a profile's documents are a queue a reviewer works through.

A proposal is an item of a binding's pending section (``confidence_rules.
pending_sections``), written by the confidence gate, the MCP ``remember`` tool or an
agent: ``{candidate, target_path, op, confidence, evidence, proposed_at, proposed_by}``.
Its id (:func:`memnet.domain.proposals.proposal_id`) names its document and a random
token the document write stored in the item. A proposal the reviewer's clearance does
not cover answers exactly as one that does not exist (``404 PROPOSAL_NOT_FOUND``), and
so does an earlier decision on one: an id must not confirm a guess. A review is one
audited document write, made through
:meth:`~memnet.services.documents.service.DocumentService.patch` under the version the proposal
was found in: ``approve`` applies the candidate at its target and removes the proposal,
``edit`` does so with the reviewer's candidate, ``reject`` only removes it. The write's
``origin.review`` records the decision (``approved``, ``edited``, ``rejected``), the
reviewer and the proposer, so the document's history is the record of every decision,
and a repeated review finds its own decision there.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, replace
from typing import Any

from memnet.domain import pointers, proposals, provenance
from memnet.domain import sensitivity_views as views
from memnet.domain.bindings import Binding
from memnet.domain.callers import Caller
from memnet.domain.document_model import Precondition, StoredDocument, WriteCommand
from memnet.domain.envelope import CONTENT, Json, canonical
from memnet.domain.errors import Conflict, EtagMismatch, NotFound, Unprocessable
from memnet.domain.layout import DocumentRef
from memnet.domain.patching import parse_ops
from memnet.domain.profiles import Profile
from memnet.domain.proposal_queue import (
    check_approvable,
    find_item,
    queue_items,
    removal_problem,
    write_target,
)
from memnet.domain.timestamps import format_millis
from memnet.ports import Clock
from memnet.services.documents.audit import AuditLog
from memnet.services.documents.listing import DocumentListing, NamespaceRef
from memnet.services.documents.service import DocumentService
from memnet.services.profiles.registry import ProfileRegistry
from memnet.services.proposals.decision import Decision, Queue, Reviewed
from memnet.services.records import retrying

DECISIONS = {"approve": "approved", "edit": "edited", "reject": "rejected"}
REVIEW_ROLES = ("review", "admin")
MAX_NAMESPACE_DOCUMENTS = 100  # read per templated namespace when listing the queue
HISTORY_LOOKBACK = 64  # changes searched for an earlier decision on a proposal


@dataclass(frozen=True)
class Review:
    proposal_id: str
    decision: str  # approve | edit | reject
    candidate: Any = None  # edit: what is written instead of the proposal's candidate
    note: str | None = None


class ProposalReview:
    def __init__(
        self,
        documents: DocumentService,
        listing: DocumentListing,
        registry: ProfileRegistry,
        audit: AuditLog,
        clock: Clock,
    ) -> None:
        self._documents, self._listing, self._registry = documents, listing, registry
        self._audit, self._clock = audit, clock

    # -- the queue ---------------------------------------------------------------------

    def pending(
        self, caller: Caller, tenant_id: str, user_id: str, profile_id: str | None
    ) -> Queue:
        """Every proposal in the pending sections of the user's documents of the profile,
        each ``pending`` or ``expired``; templated bindings are read up to
        :data:`MAX_NAMESPACE_DOCUMENTS` documents per namespace (``more`` says so)."""
        _require_reviewer_or_reader(caller, tenant_id)
        profile = self._registry.for_caller(caller, profile_id)
        now, found, more = self._clock.now(), [], False
        for binding, path in self._documents_with_proposals(caller, profile, tenant_id, user_id):
            if path is None:
                more = True
                continue
            ref = DocumentRef(tenant_id, user_id, binding.namespace, path)
            stored = self._documents.load(ref)
            if stored is not None:
                stored = self._registry.as_read(binding, stored)  # as a GET serves it
                items = queue_items(profile, binding, ref, stored, now)
                pending = profile.confidence.pending_sections[binding.binding_id]
                content = stored.document.get("content")
                rules = views.rules_for(profile, binding)
                found += views.queue_seen(items, content, pending, caller, rules)
        return Queue(tuple(found), more)

    def _documents_with_proposals(
        self, caller: Caller, profile: Profile, tenant_id: str, user_id: str
    ) -> list[tuple[Binding, str | None]]:
        """``(binding, path)`` of each document to read; ``(binding, None)`` marks a
        namespace with more documents than were read."""
        pending = profile.confidence.pending_sections
        found: list[tuple[Binding, str | None]] = []
        for binding in (b for b in profile.bindings if b.binding_id in pending):
            if binding.path is not None:
                found.append((binding, binding.path))
                continue
            where = NamespaceRef(tenant_id, user_id, binding.namespace)
            page = self._listing.list_documents(
                _reader(caller, tenant_id), where, profile.profile_id, MAX_NAMESPACE_DOCUMENTS
            )
            found += [
                (binding, d.path) for d in page.documents if d.binding_id == binding.binding_id
            ]
            if page.continuation is not None:
                found.append((binding, None))
        return found

    # -- a decision --------------------------------------------------------------------

    def review(
        self, caller: Caller, tenant_id: str, user_id: str, profile_id: str | None, review: Review
    ) -> Reviewed:
        """Apply ``review`` to the proposal it names, once: a repeated review that finds
        its own decision in the history answers it again (``replayed``); a different
        decision already taken is 409 ``PROPOSAL_ALREADY_REVIEWED``."""
        _require_reviewer(caller, tenant_id)
        where = proposals.parse_proposal_id(review.proposal_id)
        if where is None:
            raise _not_found()
        profile = self._registry.for_caller(caller, profile_id)
        ref = DocumentRef(tenant_id, user_id, *where)
        binding = self._pending_binding(profile, ref)

        def attempt() -> Reviewed:  # another write landed: find the proposal again
            stored = self._documents.load(ref)
            if stored is not None:  # planned against what the write starts from
                stored = self._registry.as_written(binding, stored)
            found = (
                None if stored is None else _seen(caller, (profile, binding), ref, stored, review)
            )
            if stored is None or found is None:
                return self._earlier(caller, (profile, binding), ref, stored, review)
            return self._decide(caller, profile, binding, ref, stored, found, review)

        try:
            return retrying(attempt, on=EtagMismatch, attempts=4)
        except EtagMismatch:
            raise Conflict(
                "The document keeps changing; retry.", code="DOCUMENT_BUSY", retry_after=1
            ) from None

    def _pending_binding(self, profile: Profile, ref: DocumentRef) -> Binding:
        found = profile.resolve(ref.namespace, ref.path)
        if found is None or found[0].binding_id not in profile.confidence.pending_sections:
            raise _not_found()
        return found[0]

    def _decide(
        self,
        caller: Caller,
        profile: Profile,
        binding: Binding,
        ref: DocumentRef,
        stored: StoredDocument,
        found: tuple[int, Json],
        review: Review,
    ) -> Reviewed:
        index, item = found
        if review.decision != "reject":
            check_approvable(caller, profile, item, self._clock.now())
        pending = profile.confidence.pending_sections[binding.binding_id]
        ops: list[Json] = [
            {"op": "remove", "path": pointers.render((CONTENT, *pending, str(index)))}
        ]
        moment = format_millis(self._clock.now())
        if review.decision != "reject":
            ops.insert(0, _written(caller, item, pending, review, (stored, moment)))
        decided = Decision(
            proposal_id=review.proposal_id,
            status=DECISIONS[review.decision],
            reviewed_by=caller.caller_id,
            proposed_by=item.get("proposed_by"),
            reviewed_at=moment,
            note=review.note,
            sensitivity=views.proposal_class(
                item, pending, index, views.rules_for(profile, binding)
            ),
        )
        command = WriteCommand(
            ref=ref,
            profile_id=profile.profile_id,
            binding_id=binding.binding_id,
            precondition=Precondition(if_match=stored.etag),
            idempotency_key=f"review:{uuid.uuid4().hex}",  # the history makes it once
            fingerprint=hashlib.sha256(canonical([review.decision, review.candidate])).hexdigest(),
            reason="proposal_review",
            request_id=review.proposal_id,
            evidence={"proposal": item.get("evidence"), "review": decided.as_json()},
            confidence=1.0,  # a person decided
            ops=parse_ops(ops),
            origin={"review": decided.recorded()},
        )
        response = self._documents.patch(_writer(caller, ref.tenant_id), command)
        body = response.body
        document = body.get("document") if caller.may_read() else None
        return Reviewed(decided, body.get("etag"), document, response.replayed)

    def _earlier(
        self,
        caller: Caller,
        governed: tuple[Profile, Binding],
        ref: DocumentRef,
        stored: StoredDocument | None,
        review: Review,
    ) -> Reviewed:
        """The answer when the proposal is not in the document (or is hidden from the
        caller): its decision if one of the last :data:`HISTORY_LOOKBACK` changes took
        it and the caller's clearance covers the proposal's class, recorded with it."""
        decided = None if stored is None else self._decision(ref, stored, review.proposal_id)
        rules = views.rules_for(*governed)
        if decided is None or not views.sees_class(caller, rules, decided.sensitivity):
            raise _not_found()
        if decided.status != DECISIONS[review.decision]:
            raise Conflict(
                "This proposal was already reviewed.",
                code="PROPOSAL_ALREADY_REVIEWED",
                status=decided.status,
            )
        return Reviewed(decided, replayed=True)

    def _decision(
        self, ref: DocumentRef, stored: StoredDocument, proposal_id: str
    ) -> Decision | None:
        """``origin.review`` of the change among the document's last
        :data:`HISTORY_LOOKBACK` that decided ``proposal_id``, if any."""
        chain = self._audit.chain(ref, stored.document.get("change_id"))
        for n, record in enumerate(chain):
            decided = (record.origin or {}).get("review") or {}
            if decided.get("proposal_id") == proposal_id:
                return Decision.from_json(decided)
            if n + 1 >= HISTORY_LOOKBACK:
                break
        return None


def _written(
    caller: Caller,
    item: Json,
    pending: tuple[str, ...],
    review: Review,
    at: tuple[StoredDocument, str],
) -> Json:
    """The op an approval or edit makes: the candidate (or the edit) written with the
    reviewer stamped into its evidence, or, for a held removal, the removal (409
    ``PROPOSAL_STALE`` when its target no longer holds what it would remove; an edit of
    a removal is 422 ``PROPOSAL_NOT_EDITABLE``)."""
    stored, moment = at
    op, target = write_target(item, pending)
    if op == "remove":
        if review.decision == "edit":
            raise Unprocessable(
                "A proposed removal is approved or rejected, not edited.",
                code="PROPOSAL_NOT_EDITABLE",
            )
        problem = removal_problem(item, stored.document.get(CONTENT))
        if problem is not None:
            raise Conflict(f"{problem}.", code="PROPOSAL_STALE")
        return {"op": "remove", "path": target}
    value = review.candidate if review.decision == "edit" else item.get("candidate")
    return {"op": op, "path": target, "value": provenance.reviewed(value, caller.caller_id, moment)}


def _seen(
    caller: Caller,
    governed: tuple[Profile, Binding],
    ref: DocumentRef,
    stored: StoredDocument,
    review: Review,
) -> tuple[int, Json] | None:
    """The proposal ``review`` names, if the caller's clearance covers it: one it does
    not is absent for it, whatever it asks."""
    profile, binding = governed
    found = find_item(profile, binding, ref, stored, review.proposal_id)
    if found is None:
        return None
    pending = profile.confidence.pending_sections[binding.binding_id]
    rules = views.rules_for(profile, binding)
    named = views.proposal_class(found[1], pending, found[0], rules)
    return found if views.sees_class(caller, rules, named) else None


def _require_reviewer(caller: Caller, tenant_id: str) -> None:
    role = next((r for r in REVIEW_ROLES if r in caller.roles), "review")
    caller.require(tenant_id, role)


def _require_reviewer_or_reader(caller: Caller, tenant_id: str) -> None:
    role = next((r for r in (*REVIEW_ROLES, "read") if r in caller.roles), "read")
    caller.require(tenant_id, role)


def _reader(caller: Caller, tenant_id: str) -> Caller:
    return replace(
        caller,
        tenants=frozenset({tenant_id}),
        roles=frozenset({"read"}),
        clearance=caller.acting_clearance(),  # an admin keeps every class
    )


def _writer(caller: Caller, tenant_id: str) -> Caller:
    """The reviewer, allowed the one write its decision makes (a reviewer need not hold
    ``write``): the audit record's actor is the reviewer's own id."""
    roles = {"write", "review"} | ({"read"} if caller.roles & {"read", "admin"} else set())
    return replace(
        caller,
        tenants=frozenset({tenant_id}),
        roles=frozenset(roles),
        clearance=caller.acting_clearance(),
    )


def _not_found() -> NotFound:
    return NotFound("No such proposal.", code="PROPOSAL_NOT_FOUND")
