"""The event digest a compaction writes before its patch: the removed items' text (from
each section's ``text_fields``), evidence pointing back at the document and its base
change, and the removed items' own evidence as ``sources`` (bounded), so that forgetting
a conversation finds digests that hold what it taught
(:mod:`memnet.services.compaction.service`)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from memnet.domain import compaction
from memnet.domain.audit_records import change_time
from memnet.domain.bindings import Binding
from memnet.domain.compaction import CompactionRules
from memnet.domain.envelope import Json, canonical
from memnet.domain.event_model import SNAPSHOT_URI
from memnet.domain.layout import DocumentRef
from memnet.domain.profiles import Profile
from memnet.domain.timestamps import format_millis

COMPACTION_CALLER = "memnet-compaction"
JOB = "compaction"
DIGEST_BUDGET = 3600  # chars of item text in one digest (an event digest holds 4000)
MAX_SOURCES = 50
EVIDENCE_BUDGET = 4000  # chars of JSON (an event's evidence holds 4096)
_IDENTITY = ("conversation_id", "snapshot_uri")


@dataclass(frozen=True)
class Target:
    ref: DocumentRef
    profile: Profile
    binding: Binding


@dataclass(frozen=True)
class Evidence:
    """A digest's evidence: the document and its base change, the removed items' own
    evidence (``sources``, at most :data:`MAX_SOURCES` of ``sources_count``) and paths."""

    ref: DocumentRef
    base_change_id: str
    sources: tuple[Json, ...]
    sources_count: int
    removed_paths: tuple[str, ...]
    removed_count: int

    def as_json(self) -> Json:
        return {
            **self.ref.as_json(),
            "base_change_id": self.base_change_id,
            "sources": list(self.sources),
            "sources_count": self.sources_count,
            "removed_paths": list(self.removed_paths),
            "removed_count": self.removed_count,
        }

    def fitted(self) -> Evidence:
        """Shrunk to :data:`EVIDENCE_BUDGET`, keeping provenance longest: first the
        removed paths go (from the end), then each source is cut to what names its
        conversation (``conversation_id``, ``snapshot_uri``), then sources go from the
        end (``sources_count`` still says how many there were)."""
        fit = self
        while fit.size() > EVIDENCE_BUDGET and fit.removed_paths:
            fit = replace(fit, removed_paths=fit.removed_paths[:-1])
        if fit.size() > EVIDENCE_BUDGET:
            cut = [{k: s[k] for k in _IDENTITY if k in s} for s in fit.sources]
            fit = replace(fit, sources=tuple(_distinct(c for c in cut if c)))
        while fit.size() > EVIDENCE_BUDGET and fit.sources:
            fit = replace(fit, sources=fit.sources[:-1])
        return fit

    def size(self) -> int:
        return len(json.dumps(self.as_json()))


@dataclass(frozen=True)
class DigestEvent:
    """The event a compaction writes (spec 10.5's body, as the job's own write)."""

    event_id: str
    timestamp: str
    digest: str
    project_ids: tuple[str, ...]
    evidence: Evidence
    snapshot_uri: str | None

    def as_json(self) -> Json:
        event: Json = {
            "event_id": self.event_id,
            "service_id": COMPACTION_CALLER,
            "timestamp": self.timestamp,
            "source_type": JOB,
            "digest": self.digest,
            "project_ids": list(self.project_ids),
            "evidence": self.evidence.as_json(),
        }
        if self.snapshot_uri is not None:
            event["snapshot_uri"] = self.snapshot_uri
        return event


def digest_event(target: Target, base: str, moved: list[compaction.Removed]) -> DigestEvent:
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
    evidence = Evidence(
        ref,
        base,
        tuple(sources[:MAX_SOURCES]),
        len(sources),
        tuple(r.path for r in moved),
        len(moved),
    )
    return DigestEvent(
        event_id="evt_cmp_" + content_hash([ref.blob_name, base])[:32],
        timestamp=format_millis(change_time(base)),
        digest=digest[:4000],
        project_ids=_project_ids(target),
        evidence=evidence.fitted(),
        snapshot_uri=_shared_snapshot(ref, per_item),
    )


def _sources(removed: compaction.Removed, rules: CompactionRules) -> list[Json]:
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


def _evidence_objects(item: Any, name: str) -> list[Json]:
    value = item.get(name) if isinstance(item, dict) else None
    members = value if isinstance(value, list) else [value]
    return [m for m in members if isinstance(m, dict) and m]


def _distinct(found: Iterable[Json]) -> list[Json]:
    seen: set[bytes] = set()
    out = []
    for source in found:
        key = canonical(source)
        if key not in seen:
            seen.add(key)
            out.append(source)
    return out


def _shared_snapshot(ref: DocumentRef, per_item: list[list[Json]]) -> str | None:
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


def _project_ids(target: Target) -> tuple[str, ...]:
    routing = target.profile.context.routing
    variables = target.binding.match(target.ref.namespace, target.ref.path) or {}
    value = variables.get(routing.project_variable) if routing else None
    return (value,) if value else ()


def content_hash(value: Any) -> str:
    return hashlib.sha256(canonical(value)).hexdigest()
