"""Context assembly (spec 10.4, 11): the memory an orchestrator injects at conversation
start, chosen by the profile, routed to at most one project, and kept within budget.

Storage reads per assembly: the routing document (a conditional read when its parsed
index is cached, none within the optional index TTL), at most ``max_semantic_candidates``
project documents when routing is ambiguous (none whose semantic text was read within
the semantic TTL), and one read per binding considered. None of these grow with the
number of projects a user has. Reads that do not depend on each other run concurrently
when the service has read workers (:mod:`memnet.services.context.reads`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

from memnet.domain import pointers, provenance
from memnet.domain import sensitivity_views as views
from memnet.domain.bindings import Binding
from memnet.domain.callers import Caller
from memnet.domain.context_render import (
    Assembled,
    Decision,
    Dropped,
    Selected,
    apply_budget,
    routing_debug,
)
from memnet.domain.document_model import StoredDocument
from memnet.domain.layout import DocumentRef
from memnet.domain.profiles import Profile, RoutingRules
from memnet.domain.project_routing import RoutingIndex, phrase_of, rank_hint, semantic_confidence
from memnet.domain.project_similarity import project_scores
from memnet.ports import BlobStore, Clock
from memnet.services.context.reads import (
    IndexCache,
    Monotonic,
    Reader,
    ReadTimer,
    SemanticTexts,
    build_index,
    semantic_text,
)
from memnet.services.profiles.registry import ProfileRegistry

INDEX_CACHE_SIZE = 1024  # routing documents
TEXT_CACHE_SIZE = 4096  # project documents' semantic texts (~1-2 KB each, typically)
# How long the routing index (only when it is not itself returned) and the projects'
# semantic texts are used without asking storage; see docs/decisions.md.
INDEX_TTL_S = 1.0
SEMANTIC_TTL_S = 30.0
READ_WORKERS = 8
CONCURRENT_READS_ABOVE_S = 0.001  # mean read time from which reads run concurrently


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


class ContextService:
    """Assembles context. ``index_ttl`` and ``semantic_ttl`` (seconds) bound how long the
    routing index and the projects' semantic texts are used without asking storage;
    ``read_workers`` (0: none) read independent documents concurrently once the mean
    read takes longer than ``concurrent_reads_above`` seconds."""

    def __init__(
        self,
        blobs: BlobStore,
        registry: ProfileRegistry,
        *,
        index_ttl: float = INDEX_TTL_S,
        semantic_ttl: float = SEMANTIC_TTL_S,
        read_workers: int = READ_WORKERS,
        concurrent_reads_above: float = CONCURRENT_READS_ABOVE_S,
        monotonic: Monotonic = time.monotonic,
        clock: Clock | None = None,
    ) -> None:
        self._blobs, self._registry = blobs, registry
        self._clock = clock  # None: documents never read as expired (a test's service)
        self._indexes = IndexCache(INDEX_CACHE_SIZE, index_ttl, monotonic)
        self._texts = SemanticTexts(TEXT_CACHE_SIZE, semantic_ttl, monotonic)
        self._workers, self._timer = read_workers, ReadTimer(concurrent_reads_above)
        self._pool: Executor | None = None
        self._pool_lock = threading.Lock()

    def assemble(self, caller: Caller, request: AssembleRequest) -> Assembled:
        caller.require(request.tenant_id, "read")
        profile = self._registry.for_caller(caller, request.profile_id)
        now = self._clock.now() if self._clock is not None else None
        reader = Reader(
            self._blobs,
            request.tenant_id,
            request.user_id,
            self._executor(),
            self._timer,
            now,
            _shaper(profile, caller, self._registry),
        )
        reader.prefetch(_fixed_refs(profile, reader), alone=True)
        decision = self._route(profile, reader, request)
        selected, dropped = self._collect(profile, reader, decision)
        max_docs = request.max_docs or profile.context.default_max_docs
        budget = request.max_chars_total or profile.context.default_max_chars_total
        rules = profile.context.rendering if request.render == "text" else None
        budgeted = apply_budget(selected, max_docs, budget, rules)
        debug = request.debug and "debug" in caller.roles
        return Assembled(
            decision,
            budgeted.kept,
            dropped + budgeted.dropped,
            [entry for s in budgeted.kept if (entry := _pending_entry(s))],
            budgeted.rendered,
            routing_debug(decision) if debug else None,
        )

    def _executor(self) -> Executor | None:
        """The read pool while reads are slow enough for it to pay; started on first use
        (nothing runs at import or construction)."""
        if not self._timer.slow:
            return None
        if self._pool is None and self._workers > 0:
            with self._pool_lock:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(self._workers, "memnet-context-read")
        return self._pool

    # -- routing -------------------------------------------------------------------

    def _route(self, profile: Profile, reader: Reader, request: AssembleRequest) -> Decision:
        rules = profile.context.routing
        if rules is None:
            return Decision(reason="no_routing")
        index, asked = self._index(profile, rules, reader)
        decision = self._decide(profile, rules, reader, index, request)
        if not asked and decision.project_id is None and (request.hint_text or request.project_id):
            # Nothing matched an index used on trust (index TTL): it may lack a project
            # added since, so ask storage before answering "no project".
            confirmed, _ = self._index(profile, rules, reader, use_ttl=False)
            if confirmed is not index:
                decision = self._decide(profile, rules, reader, confirmed, request)
        return decision

    def _decide(
        self,
        profile: Profile,
        rules: RoutingRules,
        reader: Reader,
        index: RoutingIndex,
        request: AssembleRequest,
    ) -> Decision:
        """Precedence (spec 11): a known explicit id, else the hint."""
        if request.project_id and self._known(profile, rules, reader, index, request.project_id):
            return Decision(request.project_id, "explicit_project_id", 1.0)
        decision = Decision()
        if request.project_id:
            decision.warnings.append({"code": "PROJECT_UNKNOWN", "project_id": request.project_id})
        return self._route_hint(profile, rules, reader, index, request.hint_text, decision)

    def _known(
        self,
        profile: Profile,
        rules: RoutingRules,
        reader: Reader,
        index: RoutingIndex,
        project_id: str,
    ) -> bool:
        if project_id in index.projects:
            return True
        refs = _project_refs(profile, rules, reader, project_id)
        reader.prefetch(refs)
        return any(reader.load(ref) is not None for ref in refs)

    def _route_hint(
        self,
        profile: Profile,
        rules: RoutingRules,
        reader: Reader,
        index: RoutingIndex,
        hint: str,
        decision: Decision,
    ) -> Decision:
        ranking = rank_hint(index, phrase_of(hint))
        decision.deterministic_score, decision.ranking = ranking.best, ranking
        if not ranking.tied:
            decision.reason = "no_match" if hint else "no_hint"
            return decision
        if len(ranking.tied) == 1:
            decision.project_id, confidence = ranking.tied[0], min(ranking.best, 1.0)
            decision.reason = "alias_match" if ranking.best >= 1.0 else "keyword_match"
        else:
            tied = ranking.tied[: rules.max_semantic_candidates]
            texts = self._candidate_texts(profile, rules, reader, index, tied)
            confidence = self._tie_break(hint, texts, min(ranking.best, 1.0), decision)
        if confidence < rules.min_confidence:
            decision.project_id, decision.reason = None, "low_confidence"
        return decision

    def _tie_break(
        self, hint: str, texts: dict[str, str], best: float, decision: Decision
    ) -> float:
        scores = project_scores(hint, texts)
        decision.semantic_scores = {p: round(s, 4) for p, s in scores.items()}
        winner, confidence = semantic_confidence(best, scores)
        decision.project_id, decision.reason = winner, "semantic_tiebreak"
        decision.semantic_score = round(scores.get(winner, 0.0), 4) if winner else 0.0
        return confidence

    def _candidate_texts(
        self,
        profile: Profile,
        rules: RoutingRules,
        reader: Reader,
        index: RoutingIndex,
        tied: tuple[str, ...],
    ) -> dict[str, str]:
        """Each candidate's index entry plus its document's semantic text: from the text
        cache when fresh, else read (the reads at the same time)."""
        refs = {p: _semantic_ref(profile, rules, reader, p) for p in tied}
        shared = not _classified(profile)  # else each caller's view is its own text
        cached = {
            p: (self._texts.fresh(r.blob_name) if shared else None) if r else ""
            for p, r in refs.items()
        }
        reader.prefetch(r for p, r in refs.items() if r is not None and cached[p] is None)
        texts = {}
        for project_id, ref in refs.items():
            own = cached[project_id]
            if own is None and ref is not None:
                stored = reader.load(ref)
                own = (
                    self._remember_text(rules, ref, stored)
                    if shared
                    else (semantic_text(rules, stored.document) if stored else "")
                )
            project = index.projects[project_id]
            texts[project_id] = " ".join([*project.names, *project.keywords, own or ""])
        return texts

    def _remember_text(
        self, rules: RoutingRules, ref: DocumentRef, stored: StoredDocument | None
    ) -> str:
        return self._texts.remember(
            ref.blob_name, stored, lambda document: semantic_text(rules, document)
        )

    def _index(
        self, profile: Profile, rules: RoutingRules, reader: Reader, *, use_ttl: bool = True
    ) -> tuple[RoutingIndex, bool]:
        """The routing index, and whether storage was asked for it in this assembly."""
        binding = profile.binding(rules.index_binding)
        assert binding is not None and binding.path is not None  # checked at profile load
        ref = reader.ref(binding, binding.path)
        if _classified(profile):  # each caller's view is its own index: no cache
            found = reader.load(ref)
            return (RoutingIndex() if found is None else build_index(found, rules)), True
        if not binding.in_context:  # not returned: a cached index may stand in for it
            cached, asked = self._indexes.current(self._blobs, ref.blob_name, use_ttl=use_ttl)
            if cached is not None:
                return cached, asked
        stored = reader.load(ref)
        if stored is None:
            return RoutingIndex(), True
        return self._indexes.for_version(
            ref.blob_name, stored, lambda s: build_index(s, rules)
        ), True

    # -- selection -----------------------------------------------------------------

    def _collect(
        self, profile: Profile, reader: Reader, decision: Decision
    ) -> tuple[list[Selected], list[Dropped]]:
        rules = profile.context.routing
        variables = (
            {rules.project_variable: decision.project_id} if (rules and decision.project_id) else {}
        )
        bindings = sorted(profile.bindings, key=lambda b: (b.read_priority, b.binding_id))
        paths = {b.binding_id: b.path_for(variables) for b in bindings}
        reader.prefetch(
            reader.ref(b, path)
            for b in bindings
            if (path := paths[b.binding_id]) is not None and _unavailable(b, path) is None
        )
        selected: list[Selected] = []
        dropped: list[Dropped] = []
        for binding in bindings:
            path = paths[binding.binding_id]
            reason = _unavailable(binding, path)
            stored = None if reason or path is None else reader.load(reader.ref(binding, path))
            if reason is not None or stored is None or path is None:
                dropped.append(Dropped.of(binding, path, reason or "missing"))
            else:
                selected.append(_pending_shown(profile, Selected(binding, path, stored)))
        if rules is not None and decision.project_id is not None:
            self._note_selected(profile, rules, reader, decision.project_id)
        return selected, dropped

    def _note_selected(
        self, profile: Profile, rules: RoutingRules, reader: Reader, project_id: str
    ) -> None:
        """The selected project's document was just read: keep its semantic text current."""
        ref = _semantic_ref(profile, rules, reader, project_id)
        stored = reader.loaded(ref) if ref is not None else None
        if ref is not None and stored is not None:
            self._remember_text(rules, ref, stored)


def _pending_shown(profile: Profile, selected: Selected) -> Selected:
    """The document as context shows it: its pending section (proposals no person has
    approved, possibly planted by a pasted page) left out or marked unverified, by
    ``context_rules.pending`` (docs/context.md)."""
    pending = profile.confidence.pending_sections.get(selected.binding.binding_id)
    if pending is None:
        return selected
    document = selected.stored.document
    mode = profile.context.pending
    shown, count = provenance.pending_shown(document.get("content"), pending, mode)
    if not count:
        return selected
    stored = StoredDocument(selected.stored.etag, {**document, "content": shown})
    return replace(selected, stored=stored, pending=(pointers.render(pending), count, mode))


def _pending_entry(selected: Selected) -> dict[str, Any] | None:
    """What the answer says of a kept document's pending section, if it has items."""
    if selected.pending is None:
        return None
    section, items, shown = selected.pending
    return {
        "binding_id": selected.binding.binding_id,
        "path": selected.path,
        "section": section,
        "items": items,
        "shown": {"omit": "omitted", "mark": "marked"}[shown],
    }


def _unavailable(binding: Binding, path: str | None) -> str | None:
    if not binding.in_context:
        return "not_permitted"
    return "no_project" if path is None else None


def _fixed_refs(profile: Profile, reader: Reader) -> list[DocumentRef]:
    """The in-context documents every assembly reads, whichever project is selected."""
    return [reader.ref(b, b.path) for b in profile.bindings if b.in_context and b.path is not None]


def _project_refs(
    profile: Profile, rules: RoutingRules, reader: Reader, project_id: str
) -> list[DocumentRef]:
    variables = {rules.project_variable: project_id}
    return [
        reader.ref(b, b.path_for(variables) or "")
        for b in profile.bindings
        if b.uses_variable(rules.project_variable)
    ]


def _semantic_ref(
    profile: Profile, rules: RoutingRules, reader: Reader, project_id: str
) -> DocumentRef | None:
    """The project's document that semantic disambiguation reads (its first binding)."""
    return next(iter(_project_refs(profile, rules, reader, project_id)), None)


def _classified(profile: Profile) -> bool:
    """Whether the profile has sensitivity classes: then what routing derives from a
    document (its index, its semantic text) is the reading caller's view, never cached
    across callers."""
    return profile.raw.get("sensitivity_rules") is not None


def _shaper(
    profile: Profile, caller: Caller, registry: ProfileRegistry
) -> Callable[[DocumentRef, StoredDocument], StoredDocument]:
    """Each document read as its binding's ``read_as`` serves it (an older schema
    version migrated in memory), then as the caller may see it (sensitivity)."""
    classified = _classified(profile)

    def shape(ref: DocumentRef, stored: StoredDocument) -> StoredDocument:
        found = profile.resolve(ref.namespace, ref.path)
        if found is None:
            return stored
        stored = registry.as_read(found[0], stored)
        if not classified:
            return stored
        rules = profile.sensitivity(found[0].binding_id)
        return StoredDocument(stored.etag, views.seen(stored.document, caller, rules))

    return shape
