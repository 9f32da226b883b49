"""The compaction job (spec 15, 22.3; issue 11): item shapes, freshness, then
compaction, each one audited change of one document, written through
:meth:`~memnet.services.documents.service.DocumentService.patch` like any other write.

Which profile governs a stored document: the ``profile_id`` of its head audit record
(the change the document names), else the first profile (by id) with a binding that
covers it.

Order, so a crash between any two writes loses nothing and a rerun fixes it:

0. item shapes (caller ``memnet-compaction``, reason ``compaction``, code
   ``reshape_items``): string items of a section with ``string_items_as`` become
   objects (:func:`memnet.domain.compaction.reshape_ops`), the one-time migration of
   documents written before their schema asked for one shape;
1. freshness (caller ``memnet-freshness``, reason ``freshness_downgrade``): stale
   facts become proposals in the pending section
   (:func:`memnet.domain.freshness.downgrade`);
2. the event digest of the items compaction removes for good (caller
   ``memnet-compaction``, a deterministic ``event_id`` derived from the document and
   its base change id, evidence pointing back at both), written before the document;
3. the compaction patch (reason ``compaction``, the plan's ``reason_codes``, If-Match
   of the planned version, an idempotency key derived from the base change id).

A rerun plans again from the same base and so writes the same event and the same
patch, which the create-only event blob and the idempotency key answer. A patch that
loses the race to a live writer (412) is planned again from the latest version, up to
:data:`ATTEMPTS` times; then the job yields (reported) and the next run tries again.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import TypeVar

from memnet.domain import compaction, freshness, proposals
from memnet.domain import sensitivity_views as views
from memnet.domain.callers import ANY, FULL_CLEARANCE, Caller
from memnet.domain.compaction import Plan, Protection
from memnet.domain.document_model import Precondition, StoredDocument, WriteCommand
from memnet.domain.envelope import Json, char_count
from memnet.domain.errors import EtagMismatch, MemnetError
from memnet.domain.layout import DocumentRef
from memnet.domain.patching import apply_ops, parse_ops
from memnet.domain.proposals import items_at
from memnet.ports import BlobInfo, BlobStore, Clock, MessageQueue, SearchIndex
from memnet.services.compaction.digest import (
    COMPACTION_CALLER,
    JOB,
    Target,
    content_hash,
    digest_event,
)
from memnet.services.compaction.status import (
    Refreshed,
    Reshaped,
    Status,
    TimerReport,
    refused,
)
from memnet.services.documents.audit import AuditLog
from memnet.services.documents.governing import document_ref, governing
from memnet.services.documents.idempotency import Response
from memnet.services.documents.service import DocumentService
from memnet.services.documents.write_path import Committed
from memnet.services.events.records import event_name
from memnet.services.events.service import EventService
from memnet.services.governance.walker import Walker
from memnet.services.profiles.registry import ProfileRegistry
from memnet.services.records import retrying_from

COMPACT_QUEUE = "memnet-compact"
T = TypeVar("T")
ATTEMPTS = 4
log = logging.getLogger("memnet.services.compaction.service")


def job_caller(caller_id: str, tenant_id: str) -> Caller:
    """A job's own identity: reads and writes one tenant's documents, any profile, and
    records events as itself."""
    return Caller(
        caller_id,
        frozenset({tenant_id}),
        frozenset({ANY}),
        frozenset({"read", "write"}),
        clearance=FULL_CLEARANCE,
    )


class CompactionService:
    def __init__(
        self,
        *,
        documents: DocumentService,
        events: EventService,
        registry: ProfileRegistry,
        audit: AuditLog,
        blobs: BlobStore,
        index: SearchIndex,
        queue: MessageQueue,
        clock: Clock,
        page_size: int = 1000,
        max_seconds: float = 240,
    ) -> None:
        self._documents, self._events, self._registry = documents, events, registry
        self._audit, self._blobs, self._index = audit, blobs, index
        self._queue, self._clock = queue, clock
        self._page_size, self._max_seconds = page_size, max_seconds

    # -- one document ----------------------------------------------------------------

    def compact(
        self, tenant_id: str, user_id: str, namespace: str, path: str, *, dry_run: bool = False
    ) -> Status:
        """Freshness, then compaction, of one document; the status says what changed and
        whether the document is within its targets (and if not, why)."""
        ref = DocumentRef(tenant_id, user_id, namespace, path)
        stored = self._documents.load(ref)
        target = self._target(ref, stored)
        if stored is None or target is None:
            why = "no such document" if stored is None else "no profile governs it"
            return refused(why)
        stored = self._registry.as_written(target.binding, stored)
        stored, shapes = self._reshape(target, stored, dry_run)
        fresh = self._freshness(target, stored, dry_run)
        if fresh.changed or fresh.yielded:
            stored = self._load(target) or stored  # else the one read serves
        try:
            applied = self._racing(target, stored, lambda now: self._compact(target, now, dry_run))
        except EtagMismatch:
            log.info("compaction of %s lost the race %d times", ref.blob_name, ATTEMPTS)
            why = f"lost the race to live writers {ATTEMPTS} times; the next run tries again"
            return refused(why, yielded=True, reshaped=shapes, freshness=fresh)
        return replace(applied, reshaped=shapes, freshness=fresh)

    def _compact(self, target: Target, stored: StoredDocument, dry_run: bool) -> Status:
        return self._apply(target, stored, self._plan(target, stored), dry_run)

    def _racing(
        self, target: Target, stored: StoredDocument, attempt: Callable[[StoredDocument], T]
    ) -> T:
        """``attempt`` on the document, read again after each write it loses to a live
        writer (``EtagMismatch``), at most :data:`ATTEMPTS` times."""

        def again(lost: StoredDocument) -> StoredDocument:
            return self._load(target) or lost

        return retrying_from(stored, attempt, again, on=EtagMismatch, attempts=ATTEMPTS)

    def _load(self, target: Target) -> StoredDocument | None:
        """The document as a write of it starts from: migrated in memory when stored at
        an older schema version (docs/profiles.md, "Schema migrations"), so that the
        job plans against the content its patch applies to."""
        found = self._documents.load(target.ref)
        return None if found is None else self._registry.as_written(target.binding, found)

    def _target(self, ref: DocumentRef, stored: StoredDocument | None) -> Target | None:
        found = governing(self._audit, self._registry, ref, stored)
        return None if found is None else Target(ref, *found)

    def _plan(self, target: Target, stored: StoredDocument) -> Plan:
        """Expired proposals out first (:func:`memnet.domain.proposals.expired_plan`),
        then the binding's compaction rules over what is left."""
        content = stored.document["content"]
        expired = proposals.expired_plan(target.profile, target.binding, content, self._clock.now())
        rules = target.profile.compaction.get(target.binding.binding_id)
        if rules is None:
            return expired
        if expired.ops:
            content = apply_ops({"content": content}, parse_ops(expired.ops))["content"]
        confidence = target.profile.confidence
        protection = Protection(
            confidence.durable_sections.get(target.binding.binding_id, ()),
            confidence.min_durable,
            views.item_ranks(views.rules_for(target.profile, target.binding)),
        )
        envelope = char_count(stored.document) - char_count(stored.document["content"])
        max_ops = target.profile.max_ops_per_patch
        planned = compaction.plan(content, rules, protection, envelope, max_ops)
        return Plan(
            ops=expired.ops + planned.ops,
            removed=expired.removed + planned.removed,
            reason_codes=sorted(set(expired.reason_codes + planned.reason_codes)),
            within_targets=planned.within_targets,
            why_not=planned.why_not,
        )

    def _apply(self, target: Target, stored: StoredDocument, plan: Plan, dry_run: bool) -> Status:
        base = stored.document["change_id"]
        status = Status(
            within_targets=plan.within_targets,
            why_not=tuple(plan.why_not),
            reason_codes=tuple(plan.reason_codes),
            removed=tuple(plan.removed),
            base_change_id=base,
        )
        if not plan.ops or dry_run:
            return replace(status, dry_run=dry_run, ops=tuple(plan.ops) if dry_run else ())
        moved = compaction.moved(plan)
        event_id = self._write_digest(target, base, moved) if moved else None
        try:
            response = self._patch(target, stored, plan)
        except EtagMismatch:
            if event_id is not None:
                self._discard_event(target.ref, event_id)
            raise
        return replace(status, changed=True, change_id=_change_id(response), event_id=event_id)

    def _patch(self, target: Target, stored: StoredDocument, plan: Plan) -> Response:
        step = _Step(JOB, COMPACTION_CALLER, "compaction", plan.reason_codes)
        return self._job_write(target, stored, step, plan.ops, content_hash(plan.ops))

    def _job_write(
        self,
        target: Target,
        stored: StoredDocument,
        step: _Step,
        ops: list[Json],
        fingerprint: str,
    ) -> Response:
        """One step's audited patch of the version it was planned from (If-Match), keyed
        by that version's change id so that a rerun writes it once."""
        base = stored.document["change_id"]
        command = WriteCommand(
            ref=target.ref,
            profile_id=target.profile.profile_id,
            binding_id=target.binding.binding_id,
            precondition=Precondition(if_match=stored.etag),
            idempotency_key=f"{step.name}:{base}",
            fingerprint=fingerprint,
            reason=step.reason,
            request_id=f"{step.name}-{base}",
            evidence={"job": step.name, "base_change_id": base},
            confidence=1.0,
            ops=parse_ops(ops),
            reason_codes=step.reason_codes,
        )
        return self._documents.patch(job_caller(step.caller_id, target.ref.tenant_id), command)

    # -- item shapes -----------------------------------------------------------------

    def _reshape(
        self, target: Target, stored: StoredDocument, dry_run: bool
    ) -> tuple[StoredDocument, Reshaped]:
        """Sections with ``string_items_as`` rewritten to their one item shape, as the
        first change (of its own): while a document holds an older shape its schema
        refuses every write to it, the other steps' too. The document after, and what
        was done."""
        rules = target.profile.compaction.get(target.binding.binding_id)

        def attempt(stored: StoredDocument) -> tuple[StoredDocument, Reshaped]:
            ops = compaction.reshape_ops(stored.document["content"], rules) if rules else []
            paths = tuple(op["path"] for op in ops)
            if not ops or dry_run:
                return stored, Reshaped(paths=paths, ops=tuple(ops))
            self._job_write(target, stored, _RESHAPE, ops, content_hash(ops))
            return self._load(target) or stored, Reshaped(True, paths)

        try:
            return self._racing(target, stored, attempt)
        except EtagMismatch:
            return self._load(target) or stored, Reshaped(yielded=True)

    # -- freshness -------------------------------------------------------------------

    def _freshness(self, target: Target, stored: StoredDocument, dry_run: bool) -> Refreshed:
        """Downgrade the stale facts as one audited change (its own caller and reason)."""

        def attempt(stored: StoredDocument) -> Refreshed:
            planned = self._downgrade(target, stored)
            if planned is None or not planned.ops:
                return Refreshed()
            if dry_run:
                return Refreshed(planned=planned, dry_run=True)
            response = self._patch_freshness(target, stored, planned)
            return Refreshed(True, _change_id(response), planned)

        try:
            return self._racing(target, stored, attempt)
        except EtagMismatch:
            return Refreshed(yielded=True)

    def _downgrade(self, target: Target, stored: StoredDocument) -> freshness.Downgrade | None:
        rules, binding = target.profile.freshness, target.binding
        pending = target.profile.confidence.pending_sections.get(binding.binding_id)
        sections = rules.sections.get(binding.binding_id) if rules else None
        if rules is None or pending is None or not sections:
            return None
        content = stored.document["content"]
        limit = binding.array_limits.get(pending)
        room = None if limit is None else max(limit - len(items_at(content, pending)), 0)
        room = _room(room, target.profile.max_ops_per_patch)
        return freshness.downgrade(content, sections, pending, rules, self._clock.now(), room)

    def _patch_freshness(
        self, target: Target, stored: StoredDocument, planned: freshness.Downgrade
    ) -> Response:
        base = stored.document["change_id"]
        codes = sorted(set(planned.why.values()))
        step = _Step("freshness", freshness.FRESHNESS_CALLER, "freshness_downgrade", codes)
        # proposed_at is the time of the run: the fingerprint leaves it out
        return self._job_write(
            target, stored, step, planned.ops, content_hash([base, planned.paths])
        )

    # -- the event digest --------------------------------------------------------------

    def _write_digest(self, target: Target, base: str, moved: list[compaction.Removed]) -> str:
        event = digest_event(target, base, moved)
        body, ref = event.as_json(), target.ref
        caller = job_caller(COMPACTION_CALLER, ref.tenant_id)
        self._events.write(
            caller, ref.tenant_id, ref.user_id, body, event.event_id, content_hash(body)
        )
        return event.event_id

    def _discard_event(self, ref: DocumentRef, event_id: str) -> None:
        """Best effort: the digest of a plan whose patch lost its race is unused."""
        try:
            self._index.delete(ref.tenant_id, ref.user_id, [event_id])
            self._blobs.delete(event_name(ref.tenant_id, ref.user_id, event_id))
        except Exception:
            log.warning("unused compaction digest %s not deleted", event_id, exc_info=True)

    # -- triggers ----------------------------------------------------------------------

    def handle_job(self, body: str) -> Status:
        """One ``memnet-compact`` message: ``{tenant_id, user_id, namespace, path}``."""
        message = json.loads(body)
        keys = ("tenant_id", "user_id", "namespace", "path")
        return self._compact_safely(*(str(message[k]) for k in keys))

    def _compact_safely(self, *ref: str) -> Status:
        """:meth:`compact`, with a refusal (the user being forgotten: 409; a plan the
        schema refuses: 422) reported in the status instead of failing the whole run:
        retrying would be refused the same way."""
        try:
            return self.compact(*ref)
        except MemnetError as error:
            log.warning("compaction of %s refused: %s", "/".join(ref), error)
            return refused(f"refused: {error.code}")

    def compact_names(self, names: Iterable[str], deadline: float) -> list[Status]:
        """Compact each document blob named (others are skipped) until ``deadline``
        (``time.monotonic()``)."""
        done = []
        for name in names:
            ref = document_ref(name)
            if ref is not None:
                done.append(replace(self._compact_safely(*_parts(ref)), name=name))
            if time.monotonic() >= deadline:
                break
        return done

    def run_timer(self) -> TimerReport:
        """The timer: one bounded, resumable run over every document (the ``compaction``
        :class:`~memnet.services.governance.walker.Walker`)."""
        changed: list[str] = []

        def visit(page: list[BlobInfo]) -> None:
            # A page is finished whatever the time: the walker saves its place after the
            # page, so documents cut off here would wait a whole pass. The walker stops
            # between pages at the time bound; one page overruns it at most.
            statuses = self.compact_names((b.name for b in page), float("inf"))
            changed.extend(s.name for s in statuses if s.changed and s.name)

        walker = Walker(self._blobs, self._clock, JOB, page_size=self._page_size)
        report = walker.run(visit, self._max_seconds)
        return TimerReport(report, tuple(changed))


@dataclass(frozen=True)
class _Step:
    """One of the job's writes: its name (its idempotency keys' and evidence's), caller,
    audit reason and reason codes."""

    name: str
    caller_id: str
    reason: str
    reason_codes: list[str]


_RESHAPE = _Step("reshape", COMPACTION_CALLER, "compaction", ["reshape_items"])


class CompactionTrigger:
    """The write hook (:class:`~memnet.services.documents.service.DocumentService`
    ``after_commit``): queue a compaction when a write takes a document over its targets
    (a cheap check: item counts and size, no duplicate search). The jobs' own writes
    never trigger one."""

    def __init__(self, queue: MessageQueue) -> None:
        self._queue = queue

    def __call__(self, change: Committed) -> None:
        rules = change.profile.compaction.get(change.binding.binding_id)
        if rules is None or change.after.get("updated_by") in _JOB_CALLERS:
            return
        if _over(rules, change.before) or not _over(rules, change.after):
            return
        self._queue.send(COMPACT_QUEUE, json.dumps(change.ref.as_json(), sort_keys=True))


_JOB_CALLERS = frozenset({COMPACTION_CALLER, freshness.FRESHNESS_CALLER})


def _over(rules: compaction.CompactionRules, document: Json | None) -> bool:
    if document is None:
        return False
    content = document.get("content", {})
    if rules.max_chars is not None and char_count(document) > rules.max_chars:
        return True
    return any(
        s.max_items is not None and len(items_at(content, s.pointer)) > s.max_items
        for s in rules.sections
    )


def _room(room: int | None, max_ops: int) -> int:
    """Each downgrade is two ops (the proposal, the remove)."""
    by_ops = max_ops // 2
    return by_ops if room is None else min(room, by_ops)


def _parts(ref: DocumentRef) -> tuple[str, str, str, str]:
    return ref.tenant_id, ref.user_id, ref.namespace, ref.path


def _change_id(response: Response) -> str | None:
    document = response.body.get("document") or {}
    return document.get("change_id")
