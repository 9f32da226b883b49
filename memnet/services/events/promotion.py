"""Promoting a user's repeated episodes (issue 15, capability 6; docs/profiles.md
"Promotion"; :mod:`memnet.domain.promotion`).

After a user's new events are indexed (inline at the write, which queues a ``promote``
job on the index queue, or by the index worker) the worker asks each profile with
``promotion_rules`` whether the user's newest ``max_events`` episodes hold a pattern; each
pattern becomes one item appended to the profile's binding for the user, in one audited
write as the job ``memnet-promotion`` (reason ``promotion``, the rules' confidence,
evidence naming the episodes). Only unclassified events count (a pattern of classified
ones would be written as an item of the lowest class: docs/search.md "Sensitivity").
With ``item_identity`` on the section, a pattern promoted
again replaces its item. A failure is logged and never fails the indexing: promotion is
tried again with the user's next events.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

from memnet.domain import pointers
from memnet.domain.callers import ANY, FULL_CLEARANCE, Caller
from memnet.domain.document_model import Precondition, StoredDocument, WriteCommand
from memnet.domain.envelope import CONTENT, canonical
from memnet.domain.errors import EtagMismatch, MemnetError
from memnet.domain.layout import DocumentRef, user_prefix
from memnet.domain.patching import parse_ops
from memnet.domain.pointers import Segments
from memnet.domain.profiles import Profile
from memnet.domain.promotion import known_ids, patterns
from memnet.ports import BlobStore, Clock, EventQuery, SearchIndex
from memnet.services.documents.idempotency import Response
from memnet.services.documents.service import DocumentService
from memnet.services.events.records import load_event
from memnet.services.profiles.registry import ProfileRegistry
from memnet.services.records import retrying

PROMOTION_CALLER = "memnet-promotion"
MAX_PATTERNS = 10  # items one run writes per profile
log = logging.getLogger(__name__)


class Promotion:
    def __init__(
        self,
        documents: DocumentService,
        blobs: BlobStore,
        index: SearchIndex,
        registry: ProfileRegistry,
        clock: Clock,
    ) -> None:
        self._documents, self._blobs, self._index = documents, blobs, index
        self._registry, self._clock = registry, clock

    def _uses(self, profile: Profile, tenant_id: str, user_id: str) -> bool:
        """Whether the user holds a document in a namespace of the profile's own
        (user-scoped) bindings: one listing call per namespace, at most."""
        namespaces = sorted({b.namespace for b in profile.bindings if not b.shared})
        prefix = user_prefix(tenant_id, user_id) + "documents/"
        return any(self._blobs.list_page(f"{prefix}{ns}/", None, 1).items for ns in namespaces)

    @property
    def configured(self) -> bool:
        """Whether any loaded profile promotes (else the index worker needs no hook)."""
        profiles = map(self._registry.get, self._registry.profile_ids())
        return any(p is not None and p.promotion is not None for p in profiles)

    def after_indexing(self, tenant_id: str, user_id: str) -> None:
        """The index worker's hook: promote for every profile that has rules; failures
        are logged, not raised."""
        for profile in map(self._registry.get, self._registry.profile_ids()):
            if profile is None or profile.promotion is None:
                continue
            try:
                self.promote(profile, tenant_id, user_id)
            except MemnetError as refused:
                log.warning("promotion for %s refused: %s", profile.profile_id, refused.message)
            except Exception:
                log.warning("promotion for %s failed", profile.profile_id, exc_info=True)

    def promote(self, profile: Profile, tenant_id: str, user_id: str) -> Response | None:
        """Write the user's patterns into the profile's binding; the write's answer, or
        None when there was nothing to promote, or the user does not use the profile
        (holds no document of its bindings: events carry no profile, and promotion must
        not start documents for users of other profiles)."""
        rules = profile.promotion
        binding = profile.binding(rules.binding_id) if rules else None
        if rules is None or binding is None or binding.path is None:
            return None
        if not self._uses(profile, tenant_id, user_id):
            return None
        query = EventQuery(  # unclassified events only: the item is written unclassified
            tenant_id, user_id, top_k=rules.max_events, source_types=rules.source_types, classes=()
        )
        events = [
            record.as_json()
            for hit in self._index.search(query)
            if (record := load_event(self._blobs, tenant_id, user_id, hit.event_id)) is not None
        ]
        found = patterns(rules, events)[:MAX_PATTERNS]
        if not found:
            return None
        target = pointers.render((CONTENT, *rules.pointer))
        evidence = {"event_ids": sorted({i for p in found for i in p.event_ids})}
        ref = DocumentRef(tenant_id, user_id, binding.namespace, binding.path)
        caller = _job_caller(tenant_id, user_id, profile.profile_id)

        def attempt() -> Response:
            current = self._documents.load(ref)
            etag = current.etag if current else None
            known = known_ids(rules, _items(current, rules.pointer[:-1]))
            ops = [
                {"op": "add", "path": target, "value": p.item(rules, p.known_id(known))}
                for p in found
            ]
            command = WriteCommand(
                ref=ref,
                profile_id=profile.profile_id,
                binding_id=binding.binding_id,
                precondition=Precondition(if_match=etag, create=etag is None),
                idempotency_key="promotion:" + _digest([etag, ops]),
                fingerprint=_digest(ops),
                reason="promotion",
                request_id="promotion",
                evidence=evidence,
                confidence=rules.confidence,
                ops=parse_ops(ops),
            )
            return self._documents.patch(caller, command)

        return retrying(attempt, on=EtagMismatch, attempts=3)


def _items(current: StoredDocument | None, section: Segments) -> list[Any]:
    if current is None:
        return []
    try:
        found = pointers.resolve(current.document.get("content"), section)
    except KeyError:
        return []
    return found if isinstance(found, list) else []


def _job_caller(tenant_id: str, user_id: str, profile_id: str) -> Caller:
    """The job's identity: reads and writes the one user's documents of the profile."""
    return Caller(
        PROMOTION_CALLER,
        frozenset({tenant_id}),
        frozenset({profile_id or ANY}),
        frozenset({"read", "write"}),
        user_id=user_id,
        clearance=FULL_CLEARANCE,
    )


def _digest(value: Any) -> str:
    return hashlib.sha256(canonical(value)).hexdigest()
