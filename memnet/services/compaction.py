"""The compaction job (spec 15, 22.3; issue 11): freshness first, then compaction, each
one audited change of one document, written through
:meth:`~memnet.services.documents.DocumentService.patch` like any other write.

Which profile governs a stored document: the ``profile_id`` of its head audit record
(the change the document names), else the first profile (by id) with a binding that
covers it.

Order, so a crash between any two writes loses nothing and a rerun fixes it:

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

import hashlib
import json
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from memnet.domain import compaction, freshness
from memnet.domain.callers import ANY, Caller
from memnet.domain.compaction import CompactionRules, Plan, Protection
from memnet.domain.document_model import Precondition, StoredDocument, WriteCommand
from memnet.domain.envelope import canonical, char_count
from memnet.domain.errors import EtagMismatch, MemnetError
from memnet.domain.event_model import SNAPSHOT_URI
from memnet.domain.layout import DocumentRef
from memnet.domain.patching import parse_ops
from memnet.domain.profiles import Binding, Profile
from memnet.domain.proposals import items_at
from memnet.domain.timestamps import format_millis
from memnet.ports import BlobInfo, BlobStore, Clock, MessageQueue, SearchIndex
from memnet.services.audit import AuditLog, change_time
from memnet.services.documents import Committed, DocumentService
from memnet.services.event_index import event_name
from memnet.services.events import EventService
from memnet.services.registry import ProfileRegistry
from memnet.services.walker import Walker

COMPACT_QUEUE = "memnet-compact"
COMPACTION_CALLER = "memnet-compaction"
JOB = "compaction"
ATTEMPTS = 4
DIGEST_BUDGET = 3600  # chars of item text in one digest (an event digest holds 4000)
log = logging.getLogger("memnet.services.compaction")


def job_caller(caller_id: str, tenant_id: str) -> Caller:
    """A job's own identity: reads and writes one tenant's documents, any profile, and
    records events as itself."""
    return Caller(caller_id, frozenset({tenant_id}), frozenset({ANY}), frozenset({"read", "write"}))


@dataclass(frozen=True)
class Target:
    ref: DocumentRef
    profile: Profile
    binding: Binding


class CompactionService:
    def __init__(
        self,
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
    ) -> dict[str, Any]:
        """Freshness, then compaction, of one document; the status says what changed and
        whether the document is within its targets (and if not, why)."""
        ref = DocumentRef(tenant_id, user_id, namespace, path)
        stored = self._documents.load(ref)
        target = self._target(ref, stored)
        if stored is None or target is None:
            why = "no such document" if stored is None else "no profile governs it"
            return _status(within_targets=False, why_not=[why])
        fresh = self._freshness(target, stored, dry_run)
        for attempt in range(1, ATTEMPTS + 1):
            if attempt > 1 or fresh["changed"] or fresh.get("yielded"):
                stored = self._documents.load(ref) or stored  # else the one read serves
            plan = self._plan(target, stored)
            try:
                return {**self._apply(target, stored, plan, dry_run), "freshness": fresh}
            except EtagMismatch:
                log.info("compaction of %s lost a race (attempt %d)", ref.blob_name, attempt)
        why = f"lost the race to live writers {ATTEMPTS} times; the next run tries again"
        return _status(within_targets=False, why_not=[why], yielded=True, freshness=fresh)

    def _target(self, ref: DocumentRef, stored: StoredDocument | None) -> Target | None:
        head = stored.document.get("change_id") if stored else None
        record = self._audit.read(ref.tenant_id, ref.user_id, head) if head else None
        named = self._registry.get(record["profile_id"]) if record else None
        candidates = [named] if named else [self._registry.get(p) for p in self._profile_ids()]
        for profile in candidates:
            found = profile.resolve(ref.namespace, ref.path) if profile else None
            if profile is not None and found is not None:
                return Target(ref, profile, found[0])
        return None

    def _profile_ids(self) -> list[str]:
        return self._registry.profile_ids()

    def _plan(self, target: Target, stored: StoredDocument) -> Plan:
        rules = target.profile.compaction.get(target.binding.binding_id)
        if rules is None:
            return Plan()
        confidence = target.profile.confidence
        protection = Protection(
            confidence.durable_sections.get(target.binding.binding_id, ()),
            confidence.min_durable,
        )
        content = stored.document["content"]
        envelope = char_count(stored.document) - char_count(content)
        max_ops = target.profile.max_ops_per_patch
        return compaction.plan(content, rules, protection, envelope, max_ops)

    def _apply(
        self, target: Target, stored: StoredDocument, plan: Plan, dry_run: bool
    ) -> dict[str, Any]:
        base = stored.document["change_id"]
        status = _status(
            within_targets=plan.within_targets,
            why_not=plan.why_not,
            reason_codes=plan.reason_codes,
            removed=[{"path": r.path, "reason": r.reason} for r in plan.removed],
            base_change_id=base,
        )
        if not plan.ops or dry_run:
            return {**status, "dry_run": dry_run, "ops": plan.ops if dry_run else []}
        moved = compaction.moved(plan)
        event_id = self._write_digest(target, base, moved) if moved else None
        try:
            response = self._patch(target, stored, plan, base)
        except EtagMismatch:
            if event_id is not None:
                self._discard_event(target.ref, event_id)
            raise
        changed = _change_id(response)
        return {**status, "changed": True, "change_id": changed, "event_id": event_id}

    def _patch(
        self, target: Target, stored: StoredDocument, plan: Plan, base: str
    ) -> dict[str, Any]:
        command = WriteCommand(
            ref=target.ref,
            profile_id=target.profile.profile_id,
            binding_id=target.binding.binding_id,
            precondition=Precondition(if_match=stored.etag),
            idempotency_key=f"compaction:{base}",
            fingerprint=_hash(plan.ops),
            reason="compaction",
            request_id=f"compaction-{base}",
            evidence={"job": JOB, "base_change_id": base},
            confidence=1.0,
            ops=parse_ops(plan.ops),
            reason_codes=plan.reason_codes,
        )
        return self._documents.patch(job_caller(COMPACTION_CALLER, target.ref.tenant_id), command)

    # -- freshness -------------------------------------------------------------------

    def _freshness(self, target: Target, stored: StoredDocument, dry_run: bool) -> dict[str, Any]:
        """Downgrade the stale facts as one audited change (its own caller and reason)."""
        for _ in range(ATTEMPTS):
            planned = self._downgrade(target, stored)
            if planned is None or not planned.ops:
                return {"changed": False, "downgraded": []}
            found = {"downgraded": planned.paths, "why": planned.why}
            if dry_run:
                return {"changed": False, **found, "ops": planned.ops}
            try:
                response = self._patch_freshness(target, stored, planned)
            except EtagMismatch:
                stored = self._documents.load(target.ref) or stored
                continue
            return {"changed": True, "change_id": _change_id(response), **found}
        return {"changed": False, "downgraded": [], "yielded": True}

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
    ) -> dict[str, Any]:
        base = stored.document["change_id"]
        command = WriteCommand(
            ref=target.ref,
            profile_id=target.profile.profile_id,
            binding_id=target.binding.binding_id,
            precondition=Precondition(if_match=stored.etag),
            idempotency_key=f"freshness:{base}",
            fingerprint=_hash([base, planned.paths]),  # proposed_at is the time of the run
            reason="freshness_downgrade",
            request_id=f"freshness-{base}",
            evidence={"job": "freshness", "base_change_id": base},
            confidence=1.0,
            ops=parse_ops(planned.ops),
            reason_codes=sorted(set(planned.why.values())),
        )
        caller = job_caller(freshness.FRESHNESS_CALLER, target.ref.tenant_id)
        return self._documents.patch(caller, command)

    # -- the event digest --------------------------------------------------------------

    def _write_digest(self, target: Target, base: str, moved: list[compaction.Removed]) -> str:
        body = digest_event(target, base, moved)
        caller = job_caller(COMPACTION_CALLER, target.ref.tenant_id)
        ref = target.ref
        self._events.write(caller, ref.tenant_id, ref.user_id, body, body["event_id"], _hash(body))
        return str(body["event_id"])

    def _discard_event(self, ref: DocumentRef, event_id: str) -> None:
        """Best effort: the digest of a plan whose patch lost its race is unused."""
        try:
            self._index.delete(ref.tenant_id, ref.user_id, [event_id])
            self._blobs.delete(event_name(ref.tenant_id, ref.user_id, event_id))
        except Exception:
            log.warning("unused compaction digest %s not deleted", event_id, exc_info=True)

    # -- triggers ----------------------------------------------------------------------

    def handle_job(self, body: str) -> dict[str, Any]:
        """One ``memnet-compact`` message: ``{tenant_id, user_id, namespace, path}``."""
        message = json.loads(body)
        keys = ("tenant_id", "user_id", "namespace", "path")
        return self._compact_safely(*(str(message[k]) for k in keys))

    def _compact_safely(self, *ref: str) -> dict[str, Any]:
        """:meth:`compact`, with a refusal (the user being forgotten: 409; a plan the
        schema refuses: 422) reported in the status instead of failing the whole run:
        retrying would be refused the same way."""
        try:
            return self.compact(*ref)
        except MemnetError as error:
            log.warning("compaction of %s refused: %s", "/".join(ref), error)
            return _status(within_targets=False, why_not=[f"refused: {error.code}"])

    def compact_names(self, names: Iterable[str], deadline: float) -> list[dict[str, Any]]:
        """Compact each document blob named (others are skipped) until ``deadline``
        (``time.monotonic()``)."""
        done = []
        for name in names:
            ref = _document_ref(name)
            if ref is not None:
                done.append({"name": name, **self._compact_safely(*ref)})
            if time.monotonic() >= deadline:
                break
        return done

    def run_timer(self) -> dict[str, Any]:
        """The timer: one bounded, resumable run over every document (the ``compaction``
        :class:`~memnet.services.walker.Walker`)."""
        changed: list[str] = []

        def visit(page: list[BlobInfo]) -> None:
            # A page is finished whatever the time: the walker saves its place after the
            # page, so documents cut off here would wait a whole pass. The walker stops
            # between pages at the time bound; one page overruns it at most.
            statuses = self.compact_names((b.name for b in page), float("inf"))
            changed.extend(s["name"] for s in statuses if s.get("changed"))

        walker = Walker(self._blobs, self._clock, JOB, page_size=self._page_size)
        report = walker.run(visit, self._max_seconds)
        return {"job": JOB, **report.as_json(), "changed": changed}


class CompactionTrigger:
    """The write hook (:class:`~memnet.services.documents.DocumentService`
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


def _over(rules: compaction.CompactionRules, document: dict[str, Any] | None) -> bool:
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


def _document_ref(name: str) -> tuple[str, str, str, str] | None:
    parts = name.split("/")
    if len(parts) < 7 or parts[0] != "tenants" or parts[2] != "users" or parts[4] != "documents":
        return None
    return parts[1], parts[3], parts[5], "/".join(parts[6:])


def digest_event(target: Target, base: str, moved: list[compaction.Removed]) -> dict[str, Any]:
    """The one event that keeps what a compaction removes: a digest of the items' text
    (as much as fits, by the sections' ``text_fields``) and evidence pointing back at
    the document and the base change, where the full items stay readable in the
    document's history, and at the items' own evidence (``sources``), so that forgetting
    a conversation finds the digests that hold text learned from it."""
    ref = target.ref
    rules = target.profile.compaction.get(target.binding.binding_id) or CompactionRules()
    texts = [
        compaction.digest_text(r.item, compaction.section_of(rules, r.path), rules) for r in moved
    ]
    shown, used = [], 0
    for text in texts:
        if used + len(text) > DIGEST_BUDGET:
            break
        shown.append(text)
        used += len(text) + 2
    more = len(texts) - len(shown)
    tail = f" (and {more} more; full items at change {base})" if more else ""
    digest = f"Compacted from {ref.namespace}/{ref.path}: " + "; ".join(shown) + tail
    per_item = [_sources(r, rules) for r in moved]
    sources = _distinct(s for found in per_item for s in found)
    evidence: dict[str, Any] = {**ref.as_json(), "base_change_id": base}
    evidence["sources"] = sources[:MAX_SOURCES]
    evidence["sources_count"] = len(sources)
    evidence["removed_paths"] = [r.path for r in moved]
    evidence["removed_count"] = len(moved)
    _fit(evidence)
    event: dict[str, Any] = {
        "event_id": "evt_cmp_" + _hash([ref.blob_name, base])[:32],
        "service_id": COMPACTION_CALLER,
        "timestamp": format_millis(change_time(base)),
        "source_type": JOB,
        "digest": digest[:4000],
        "project_ids": _project_ids(target),
        "evidence": evidence,
    }
    uri = _shared_snapshot(ref, per_item)
    if uri is not None:
        event["snapshot_uri"] = uri
    return event


MAX_SOURCES = 50
EVIDENCE_BUDGET = 4000  # chars of JSON (an event's evidence holds 4096)
_IDENTITY = ("conversation_id", "snapshot_uri")


def _sources(removed: compaction.Removed, rules: CompactionRules) -> list[dict[str, Any]]:
    """The item's evidence objects (its ``evidence_field`` member, or that list's
    objects); for a pending proposal, its own and its candidate's."""
    section = compaction.section_of(rules, removed.path)
    item = removed.item
    found = _evidence_objects(item, section.evidence_field if section else "evidence")
    if isinstance(item, dict) and "candidate" in item:
        target = item.get("target_path")
        aimed = compaction.section_of(rules, target) if isinstance(target, str) else None
        name = aimed.evidence_field if aimed else "evidence"
        found += _evidence_objects(item["candidate"], name)
    return _distinct(found)


def _evidence_objects(item: Any, name: str) -> list[dict[str, Any]]:
    value = item.get(name) if isinstance(item, dict) else None
    members = value if isinstance(value, list) else [value]
    return [m for m in members if isinstance(m, dict) and m]


def _distinct(found: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: set[bytes] = set()
    out = []
    for source in found:
        key = canonical(source)
        if key not in seen:
            seen.add(key)
            out.append(source)
    return out


def _fit(evidence: dict[str, Any]) -> None:
    """Shrink the evidence to :data:`EVIDENCE_BUDGET`, keeping provenance longest: first
    the removed paths go (from the end), then each source is cut to what names its
    conversation (``conversation_id``, ``snapshot_uri``), then sources go from the end
    (``sources_count`` still says how many there were)."""

    def size() -> int:
        return len(json.dumps(evidence))

    while size() > EVIDENCE_BUDGET and evidence["removed_paths"]:
        evidence["removed_paths"] = evidence["removed_paths"][:-1]
    if size() > EVIDENCE_BUDGET:
        cut = [{k: s[k] for k in _IDENTITY if k in s} for s in evidence["sources"]]
        evidence["sources"] = _distinct(c for c in cut if c)
    while size() > EVIDENCE_BUDGET and evidence["sources"]:
        evidence["sources"] = evidence["sources"][:-1]


def _shared_snapshot(ref: DocumentRef, per_item: list[list[dict[str, Any]]]) -> str | None:
    """The one snapshot every removed item's evidence names (each item's sources name
    exactly one, the same for all), when there is one and it is this user's (the event
    model accepts no other)."""
    uris: set[Any] = set()
    for sources in per_item:
        mine = {s["snapshot_uri"] for s in sources if s.get("snapshot_uri") is not None}
        if len(mine) != 1:
            return None
        uris |= mine
    uri = uris.pop() if len(uris) == 1 else None
    if not isinstance(uri, str) or ".." in uri:
        return None
    found = SNAPSHOT_URI.fullmatch(uri)
    return uri if found and (found["t"], found["u"]) == (ref.tenant_id, ref.user_id) else None


def _project_ids(target: Target) -> list[str]:
    routing = target.profile.context.routing
    variables = target.binding.match(target.ref.namespace, target.ref.path) or {}
    value = variables.get(routing.project_variable) if routing else None
    return [value] if value else []


def _change_id(response: dict[str, Any]) -> str | None:
    document = response["body"].get("document") or {}
    return document.get("change_id")


def _hash(value: Any) -> str:
    return hashlib.sha256(canonical(value)).hexdigest()


def _status(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "changed": False,
        "change_id": None,
        "reason_codes": [],
        "within_targets": True,
        "why_not": [],
        "event_id": None,
    }
    return {**base, **fields}
