"""The event digest a compaction writes before its patch: the removed items' text (from
each section's ``text_fields``), evidence pointing back at the document and its base
change, and the removed items' own evidence as ``sources`` (bounded), so that forgetting
a conversation finds digests that hold what it taught
(:mod:`memnet.services.compaction.service`)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from memnet.domain import compaction
from memnet.domain.audit_records import change_time
from memnet.domain.bindings import Binding
from memnet.domain.compaction import CompactionRules
from memnet.domain.envelope import canonical
from memnet.domain.event_model import SNAPSHOT_URI
from memnet.domain.layout import DocumentRef
from memnet.domain.profiles import Profile
from memnet.domain.timestamps import format_millis

COMPACTION_CALLER = "memnet-compaction"
JOB = "compaction"
DIGEST_BUDGET = 3600  # chars of item text in one digest (an event digest holds 4000)


@dataclass(frozen=True)
class Target:
    ref: DocumentRef
    profile: Profile
    binding: Binding


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
        "event_id": "evt_cmp_" + content_hash([ref.blob_name, base])[:32],
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


def content_hash(value: Any) -> str:
    return hashlib.sha256(canonical(value)).hexdigest()
