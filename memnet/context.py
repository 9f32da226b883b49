"""Context assembly (spec 10.4, 11): the memory an orchestrator injects at conversation
start, chosen by the profile, routed to at most one project, and kept within budget.

Storage reads per assembly: the routing document (skipped when unchanged and not itself
returned), at most ``max_semantic_candidates`` project documents when routing is
ambiguous, and one read per binding considered. None of these grow with the number of
projects a user has.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from memnet import pointers
from memnet.auth import Caller
from memnet.context_render import Selected, apply_budget, render_text
from memnet.documents import StoredDocument
from memnet.layout import DocumentRef
from memnet.ports import BlobNotFound, BlobStore
from memnet.profiles import Binding, Profile, RoutingRules
from memnet.registry import ProfileRegistry
from memnet.routing import RoutingIndex, matches, rank, semantic_confidence, tokens
from memnet.similarity import Similarity

INDEX_CACHE_SIZE = 1024


@dataclass(frozen=True)
class AssembleRequest:
    tenant_id: str
    user_id: str
    profile_id: str | None = None
    hint_text: str = ""
    project_id: str | None = None
    max_docs: int | None = None
    max_chars_total: int | None = None
    debug: bool = False
    render: str = "json"


@dataclass
class Decision:
    """How the project was chosen; ``routing_debug`` is built from it."""

    project_id: str | None = None
    reason: str = "no_hint"
    deterministic_score: float = 0.0
    semantic_score: float | None = None
    candidates: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[dict[str, Any]] = field(default_factory=list)


class _Reader:
    """Reads a user's documents at most once per assembly."""

    def __init__(self, blobs: BlobStore, tenant_id: str, user_id: str) -> None:
        self.blobs, self.tenant_id, self.user_id = blobs, tenant_id, user_id
        self._seen: dict[str, StoredDocument | None] = {}

    def ref(self, binding: Binding, path: str) -> DocumentRef:
        return DocumentRef(self.tenant_id, self.user_id, binding.namespace, path)

    def load(self, ref: DocumentRef) -> StoredDocument | None:
        if ref.blob_name not in self._seen:
            self._seen[ref.blob_name] = _read(self.blobs, ref.blob_name)
        return self._seen[ref.blob_name]


def _read(blobs: BlobStore, name: str) -> StoredDocument | None:
    try:
        blob = blobs.read(name)
    except BlobNotFound:
        return None
    return StoredDocument(blob.etag, json.loads(blob.data))


class ContextService:
    def __init__(self, blobs: BlobStore, registry: ProfileRegistry, similarity: Similarity):
        self._blobs, self._registry, self._similarity = blobs, registry, similarity
        self._indexes: OrderedDict[str, tuple[str, RoutingIndex]] = OrderedDict()
        self._lock = threading.Lock()

    def assemble(self, caller: Caller, request: AssembleRequest) -> dict[str, Any]:
        caller.require(request.tenant_id, "read")
        profile = self._registry.for_caller(caller, request.profile_id)
        reader = _Reader(self._blobs, request.tenant_id, request.user_id)
        decision = self._route(profile, reader, request)
        selected, dropped = self._collect(profile, reader, decision)
        max_docs = request.max_docs or profile.context.default_max_docs
        budget = request.max_chars_total or profile.context.default_max_chars_total
        kept, over = apply_budget(selected, max_docs, budget, request.render == "text")
        result = _result(decision, kept, dropped + over)
        if request.render == "text":
            result["rendered"] = render_text(kept)
        if request.debug and "debug" in caller.roles:
            result["routing_debug"] = _debug(decision)
        return result

    # -- routing -------------------------------------------------------------------

    def _route(self, profile: Profile, reader: _Reader, request: AssembleRequest) -> Decision:
        rules = profile.context.routing
        decision = Decision()
        if rules is None:
            decision.reason = "no_routing"
            return decision
        index = self._index(profile, rules, reader)
        if request.project_id and self._known(profile, rules, reader, index, request.project_id):
            return Decision(request.project_id, "explicit_project_id", 1.0)
        if request.project_id:
            decision.warnings.append({"code": "PROJECT_UNKNOWN", "project_id": request.project_id})
        return self._route_hint(profile, rules, reader, index, request.hint_text, decision)

    def _known(
        self,
        profile: Profile,
        rules: RoutingRules,
        reader: _Reader,
        index: RoutingIndex,
        project_id: str,
    ) -> bool:
        if project_id in index.projects:
            return True
        return any(
            reader.load(ref) is not None
            for ref in _project_refs(profile, rules, reader, project_id)
        )

    def _route_hint(
        self,
        profile: Profile,
        rules: RoutingRules,
        reader: _Reader,
        index: RoutingIndex,
        hint: str,
        decision: Decision,
    ) -> Decision:
        ranking = rank(matches(index, tokens(hint)))
        decision.deterministic_score = ranking.best
        decision.candidates = [
            {"project_id": p, "deterministic_score": s, "matched": ranking.matched[p]}
            for p, s in sorted(ranking.scores.items(), key=lambda kv: -kv[1])
        ]
        if not ranking.tied:
            decision.reason = "no_match" if hint else "no_hint"
            return decision
        if len(ranking.tied) == 1:
            decision.project_id, confidence = ranking.tied[0], min(ranking.best, 1.0)
            decision.reason = "alias_match" if ranking.best >= 1.0 else "keyword_match"
        else:
            confidence = self._tie_break(
                profile, rules, reader, index, hint, ranking.tied, min(ranking.best, 1.0), decision
            )
        if confidence < rules.min_confidence:
            decision.project_id, decision.reason = None, "low_confidence"
        return decision

    def _tie_break(
        self,
        profile: Profile,
        rules: RoutingRules,
        reader: _Reader,
        index: RoutingIndex,
        hint: str,
        tied: tuple[str, ...],
        best: float,
        decision: Decision,
    ) -> float:
        texts = {
            p: _project_text(profile, rules, reader, index, p)
            for p in tied[: rules.max_semantic_candidates]
        }
        scores = self._similarity.scores(hint, texts)
        for candidate in decision.candidates:
            if candidate["project_id"] in scores:  # only the candidates actually scored
                candidate["semantic_score"] = round(scores[candidate["project_id"]], 4)
        winner, confidence = semantic_confidence(best, scores)
        decision.project_id, decision.reason = winner, "semantic_tiebreak"
        decision.semantic_score = round(scores.get(winner, 0.0), 4) if winner else 0.0
        return confidence

    def _index(self, profile: Profile, rules: RoutingRules, reader: _Reader) -> RoutingIndex:
        binding = profile.binding(rules.index_binding)
        assert binding is not None and binding.path is not None  # checked at profile load
        ref = reader.ref(binding, binding.path)
        cached = self._indexes.get(ref.blob_name)
        reusable = cached is not None and not binding.in_context
        if reusable and cached and _unchanged(self._blobs, ref.blob_name, cached[0]):
            return cached[1]
        stored = reader.load(ref)
        if stored is None:
            return RoutingIndex()
        if cached is not None and cached[0] == stored.etag:
            return cached[1]
        return self._remember(ref.blob_name, stored, rules)

    def _remember(self, name: str, stored: StoredDocument, rules: RoutingRules) -> RoutingIndex:
        try:
            entries = pointers.resolve(stored.document, ("content", *rules.index_pointer))
        except KeyError:
            entries = []
        index = RoutingIndex.build(entries if isinstance(entries, list) else [])
        with self._lock:
            self._indexes[name] = (stored.etag, index)
            self._indexes.move_to_end(name)
            while len(self._indexes) > INDEX_CACHE_SIZE:
                self._indexes.popitem(last=False)
        return index

    # -- selection -----------------------------------------------------------------

    def _collect(
        self, profile: Profile, reader: _Reader, decision: Decision
    ) -> tuple[list[Selected], list[dict[str, Any]]]:
        rules = profile.context.routing
        variables = (
            {rules.project_variable: decision.project_id} if (rules and decision.project_id) else {}
        )
        selected: list[Selected] = []
        dropped: list[dict[str, Any]] = []
        for binding in sorted(profile.bindings, key=lambda b: (b.read_priority, b.binding_id)):
            path = binding.path_for(variables)
            reason = _unavailable(binding, path)
            stored = None if reason or path is None else reader.load(reader.ref(binding, path))
            if reason is None and stored is None:
                reason = "missing"
            if reason is not None or stored is None or path is None:
                dropped.append(_dropped(binding, path, reason or "missing"))
            else:
                selected.append(Selected(binding, path, stored))
        return selected, dropped


def _unchanged(blobs: BlobStore, name: str, etag: str) -> bool:
    try:
        return blobs.read_if_changed(name, etag) is None
    except BlobNotFound:
        return False  # gone: the normal read below reports it missing


def _unavailable(binding: Binding, path: str | None) -> str | None:
    if not binding.in_context:
        return "not_permitted"
    return "no_project" if path is None else None


def _dropped(binding: Binding, path: str | None, reason: str) -> dict[str, Any]:
    return {
        "binding_id": binding.binding_id,
        "namespace": binding.namespace,
        "path": path,
        "reason": reason,
    }


def _project_refs(
    profile: Profile, rules: RoutingRules, reader: _Reader, project_id: str
) -> list[DocumentRef]:
    variables = {rules.project_variable: project_id}
    return [
        reader.ref(b, b.path_for(variables) or "")
        for b in profile.bindings
        if b.uses_variable(rules.project_variable)
    ]


def _project_text(
    profile: Profile, rules: RoutingRules, reader: _Reader, index: RoutingIndex, project_id: str
) -> str:
    project = index.projects[project_id]
    parts = [*project.names, *project.keywords]
    first = next(iter(_project_refs(profile, rules, reader, project_id)), None)
    stored = reader.load(first) if first is not None else None
    document = stored.document if stored is not None else {}
    for pointer in rules.semantic_pointers:
        try:
            parts.extend(_strings_in(pointers.resolve(document, ("content", *pointer))))
        except KeyError:
            continue
    return " ".join(parts)


def _strings_in(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [str(k), *_strings_in(v)]]
    if isinstance(value, list):
        return [s for item in value for s in _strings_in(item)]
    return []


def _result(
    decision: Decision, kept: list[Selected], dropped: list[dict[str, Any]]
) -> dict[str, Any]:
    result: dict[str, Any] = {
        "selected_project_id": decision.project_id,
        "documents": [s.as_json() for s in kept],
        "dropped_bindings": dropped,
    }
    if decision.warnings:
        result["warnings"] = decision.warnings
    return result


def _debug(decision: Decision) -> dict[str, Any]:
    return {
        "deterministic_score": decision.deterministic_score,
        "semantic_score": decision.semantic_score,
        "reason": decision.reason,
        "candidates": decision.candidates,
    }
