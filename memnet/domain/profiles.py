"""Profiles: which documents an agent may read and write, and under which rules (spec 8.2).

Profiles are data in ``MEMNET_PROFILES_DIR``; the core never names a binding or a
section. Loading validates every profile against ``domain/profile.schema.json`` and
checks cross references, raising :class:`~memnet.domain.errors.ConfigError` naming the
file and field.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from memnet.domain import compaction, freshness, guard, pointers, promotion, sensitivity
from memnet.domain.bindings import Binding, parse_binding
from memnet.domain.compaction import CompactionRules
from memnet.domain.freshness import FreshnessRules
from memnet.domain.guard import GuardRules
from memnet.domain.pointers import Segments
from memnet.domain.promotion import PromotionRules
from memnet.domain.ranking import Ranking
from memnet.domain.sensitivity import SensitivityRules

DEFAULT_MAX_OPS = 50
DEFAULT_MAX_STATEMENTS = 20


@dataclass(frozen=True)
class ConfidenceRules:
    """Confidence gates (spec 12, 22.2): durable sections and where low-confidence ops go."""

    min_durable: float = 0.0
    min_auto_apply: float = 0.0
    durable_sections: Mapping[str, tuple[Segments, ...]] = field(default_factory=dict)
    pending_sections: Mapping[str, Segments] = field(default_factory=dict)
    require_evidence: bool = True


@dataclass(frozen=True)
class ProposalRules:
    """How proposals in pending sections are reviewed (docs/proposals.md)."""

    ttl_seconds: int | None = None
    self_approval: bool = False
    review_required: bool = False  # durable sections: written by reviewers only


@dataclass(frozen=True)
class RoutingRules:
    """Where the routing index lives and how confident routing must be (spec 11)."""

    index_binding: str
    index_pointer: Segments
    project_variable: str
    min_confidence: float = 0.3
    semantic_pointers: tuple[Segments, ...] = ()
    max_semantic_candidates: int = 5


@dataclass(frozen=True)
class RenderRules:
    """How ``render: "text"`` writes an item (docs/context.md): the members that hold an
    item's text, first found first, and the members left out of the text."""

    text_fields: tuple[str, ...] = ()
    omit_fields: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ContextRules:
    default_max_docs: int = 8
    default_max_chars_total: int = 60_000
    routing: RoutingRules | None = None
    rendering: RenderRules = RenderRules()
    pending: str = "omit"  # how assembly shows pending sections: "omit" or "mark"


@dataclass(frozen=True)
class StatementRule:
    """One ``replay_rules`` statement (docs/profiles.md): where ``pattern`` matches a
    message of one of ``roles``, its ``text`` group becomes ``value`` (a template, see
    :func:`~memnet.domain.value_templates.fill_value`) added at ``pointer`` of the
    ``binding_id`` document."""

    rule_id: str
    pattern: re.Pattern[str]
    roles: frozenset[str]
    binding_id: str
    pointer: Segments
    value: Any
    confidence: float


@dataclass(frozen=True)
class ReplayRules:
    """What the rule extractor looks for; none: it writes digests only."""

    statements: tuple[StatementRule, ...] = ()
    max_statements: int = DEFAULT_MAX_STATEMENTS


@dataclass(frozen=True)
class Profile:
    profile_id: str
    bindings: tuple[Binding, ...]
    writable_paths: Mapping[str, tuple[Segments, ...]]
    denied_paths: Mapping[str, tuple[Segments, ...]]
    max_ops_per_patch: int
    confidence: ConfidenceRules
    raw: Mapping[str, Any]
    context: ContextRules = ContextRules()
    replay: ReplayRules = ReplayRules()
    compaction: Mapping[str, CompactionRules] = field(default_factory=dict)
    freshness: FreshnessRules | None = None
    proposals: ProposalRules = ProposalRules()
    ranking: Ranking | None = None  # search_rules.ranking: the search blend by default
    dense_weight: float | None = None  # search_rules.dense_weight: hybrid search's fusion
    promotion: PromotionRules | None = None  # promotion_rules: episodes into an item
    guard: GuardRules | None = None  # guard_rules: the poisoning guard (docs/security.md)
    # sensitivity_rules as each binding sees them ("": the classes alone), built once
    classified: Mapping[str, SensitivityRules] = field(default_factory=dict)

    def sensitivity(self, binding_id: str) -> SensitivityRules | None:
        """The sensitivity rules as they apply to one binding, if the profile has any
        (every write and read of a classified document asks: parsed once, at load)."""
        return self.classified.get(binding_id)

    def binding(self, binding_id: str) -> Binding | None:
        return next((b for b in self.bindings if b.binding_id == binding_id), None)

    def resolve(self, namespace: str, path: str) -> tuple[Binding, dict[str, str]] | None:
        """The binding covering ``namespace/path`` and its template variables, if any."""
        for binding in self.bindings:
            variables = binding.match(namespace, path)
            if variables is not None:
                return binding, variables
        return None


def build_profile(raw: Mapping[str, Any]) -> Profile:
    """Build a :class:`Profile` from an already meta-schema-valid mapping."""
    return Profile(
        profile_id=raw["profile_id"],
        bindings=tuple(parse_binding(b) for b in raw["document_bindings"]),
        writable_paths=_pointer_map(raw.get("writable_path_rules", {})),
        denied_paths=_pointer_map(raw.get("denied_path_rules", {})),
        max_ops_per_patch=raw.get("patch_rules", {}).get("max_ops_per_patch", DEFAULT_MAX_OPS),
        confidence=_build_confidence(raw.get("confidence_rules", {})),
        raw=raw,
        context=_build_context(raw.get("context_rules", {})),
        replay=_build_replay(raw.get("replay_rules", {})),
        compaction={
            b: compaction.parse_rules(r) for b, r in raw.get("compaction_rules", {}).items()
        },
        freshness=_build_freshness(raw),
        proposals=ProposalRules(**raw.get("proposal_rules", {})),
        ranking=_build_ranking(raw.get("search_rules", {}).get("ranking")),
        dense_weight=raw.get("search_rules", {}).get("dense_weight"),
        promotion=_build_promotion(raw.get("promotion_rules")),
        classified=_build_sensitivity(raw),
        guard=_build_guard(raw.get("guard_rules")),
    )


def _build_guard(raw: Mapping[str, Any] | None) -> GuardRules | None:
    return guard.parse_rules(raw)


def _build_sensitivity(raw: Mapping[str, Any]) -> dict[str, SensitivityRules]:
    rules = raw.get("sensitivity_rules")
    if rules is None:
        return {}
    ids = ["", *(b["binding_id"] for b in raw["document_bindings"])]
    return {binding_id: sensitivity.parse_rules(rules, binding_id) for binding_id in ids}


def _build_promotion(raw: Mapping[str, Any] | None) -> PromotionRules | None:
    return None if raw is None else promotion.parse_rules(raw)


def _build_ranking(raw: Mapping[str, Any] | None) -> Ranking | None:
    return None if raw is None else Ranking.of(raw)


def _build_freshness(raw: Mapping[str, Any]) -> FreshnessRules | None:
    rules = raw.get("freshness_rules")
    return None if rules is None else freshness.parse_rules(rules)


def freshness_problem(raw: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(field, problem)`` when ``freshness_rules`` cannot work, for the loader's
    :class:`~memnet.domain.errors.ConfigError`: each binding it names needs a pending
    section (where stale facts go), and a freshness section is not that section."""
    pending = raw.get("confidence_rules", {}).get("pending_sections", {})
    for binding_id, sections in raw.get("freshness_rules", {}).get("sections", {}).items():
        where = f"/freshness_rules/sections/{binding_id}"
        if binding_id not in pending:
            return where, "names a binding without confidence_rules.pending_sections"
        if pending[binding_id] in sections:
            return where, "lists the binding's pending section"
    return None


def _pointer_map(raw: Mapping[str, list[str]]) -> dict[str, tuple[Segments, ...]]:
    return {binding: tuple(pointers.parse(p) for p in ptrs) for binding, ptrs in raw.items()}


def _build_context(raw: Mapping[str, Any]) -> ContextRules:
    routing, rendering = raw.get("routing"), raw.get("rendering", {})
    return ContextRules(
        default_max_docs=raw.get("default_max_docs", 8),
        default_max_chars_total=raw.get("default_max_chars_total", 60_000),
        pending=raw.get("pending", "omit"),
        rendering=RenderRules(
            tuple(rendering.get("text_fields", ())), frozenset(rendering.get("omit_fields", ()))
        ),
        routing=None
        if routing is None
        else RoutingRules(
            index_binding=routing["index_binding"],
            index_pointer=pointers.parse(routing["index_pointer"]),
            project_variable=routing["project_variable"],
            min_confidence=routing.get("min_confidence", 0.3),
            semantic_pointers=tuple(map(pointers.parse, routing.get("semantic_pointers", []))),
            max_semantic_candidates=routing.get("max_semantic_candidates", 5),
        ),
    )


def _build_confidence(raw: Mapping[str, Any]) -> ConfidenceRules:
    return ConfidenceRules(
        min_durable=raw.get("min_confidence_for_durable_fact", 0.0),
        min_auto_apply=raw.get("min_confidence_for_auto_apply", 0.0),
        durable_sections=_pointer_map(raw.get("durable_sections", {})),
        pending_sections={b: pointers.parse(p) for b, p in raw.get("pending_sections", {}).items()},
        require_evidence=raw.get("require_evidence_for_durable", True),
    )


def _build_replay(raw: Mapping[str, Any]) -> ReplayRules:
    return ReplayRules(
        statements=tuple(
            StatementRule(
                rule_id=rule["id"],
                pattern=re.compile(rule["pattern"]),
                roles=frozenset(rule.get("roles", ["user"])),
                binding_id=rule["binding"],
                pointer=pointers.parse(rule["pointer"]),
                value=rule.get("value", "{text}"),
                confidence=rule["confidence"],
            )
            for rule in raw.get("statements", [])
        ),
        max_statements=raw.get("max_statements", DEFAULT_MAX_STATEMENTS),
    )
