"""Profiles: which documents an agent may read and write, and under which rules (spec 8.2).

Profiles are data in ``MEMNET_PROFILES_DIR``; the core never names a binding or a
section. Loading validates every profile against ``domain/profile.schema.json`` and
checks cross references, raising :class:`~memnet.domain.errors.ConfigError` naming the
file and field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memnet.domain import pointers
from memnet.domain.pointers import Segments

if TYPE_CHECKING:  # imported when a profile is built: they use the envelope, which uses us
    from memnet.domain.compaction import CompactionRules
    from memnet.domain.freshness import FreshnessRules
    from memnet.domain.guard import GuardRules
    from memnet.domain.promotion import PromotionRules
    from memnet.domain.ranking import Ranking
    from memnet.domain.sensitivity import SensitivityRules
    from memnet.domain.upsert import IdentityRule

DEFAULT_MAX_OPS = 50
DEFAULT_MAX_STATEMENTS = 20
_TEMPLATE_VAR = re.compile(r"\{([a-z_]+)\}")
_VAR_VALUE = r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}"
INLINE_FIELDS = frozenset({"text", "message_id", "timestamp"})
WHOLE_FIELDS = frozenset({"confidence", "evidence"})


@dataclass(frozen=True)
class Binding:
    """One document a profile governs: where it lives, its schema and its limits."""

    binding_id: str
    namespace: str
    schema_id: str
    schema_version: str
    max_chars: int
    read_priority: int
    write_mode: str
    path: str | None = None
    path_template: str | None = None
    array_limits: Mapping[Segments, int] = field(default_factory=dict)
    initial_content: Mapping[str, Any] = field(default_factory=dict)
    in_context: bool = True
    ttl_seconds: int | None = None  # expires this long after its last write
    lookup_fields: Mapping[str, Segments] = field(default_factory=dict)
    item_identity: Mapping[Segments, IdentityRule] = field(default_factory=dict)
    scope: str = "user"  # "tenant": one document the tenant's users share
    write_roles: frozenset[str] | None = None  # None: the scope's default (write_roles_of)

    def path_for(self, variables: Mapping[str, str]) -> str | None:
        """The concrete path: fixed, or the template filled from ``variables``."""
        if self.path is not None:
            return self.path
        names = _TEMPLATE_VAR.findall(self.path_template or "")
        if not all(name in variables for name in names):
            return None
        return _TEMPLATE_VAR.sub(lambda m: variables[m.group(1)], self.path_template or "")

    def uses_variable(self, name: str) -> bool:
        return name in _TEMPLATE_VAR.findall(self.path_template or "")

    def match(self, namespace: str, path: str) -> dict[str, str] | None:
        """Return the template variables if this binding covers ``namespace/path``."""
        if namespace != self.namespace:
            return None
        if self.path is not None:
            return {} if path == self.path else None
        found = _template_regex(self.path_template or "").fullmatch(path)
        return None if found is None else found.groupdict()

    @property
    def writable(self) -> bool:
        return self.write_mode != "read_only"

    @property
    def shared(self) -> bool:
        return self.scope == "tenant"

    @property
    def patch_roles(self) -> frozenset[str]:
        """Roles that may patch its documents: ``write_roles``, else ``write`` for a
        user's own documents and ``admin`` for the tenant's shared ones."""
        if self.write_roles is not None:
            return self.write_roles
        return frozenset({"admin"} if self.shared else {"write"})


def _template_regex(template: str) -> re.Pattern[str]:
    parts = _TEMPLATE_VAR.split(template)
    regex = "".join(
        f"(?P<{part}>{_VAR_VALUE})" if i % 2 else re.escape(part) for i, part in enumerate(parts)
    )
    return re.compile(regex)


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
    :func:`fill_value`) added at ``pointer`` of the ``binding_id`` document."""

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
    from memnet.domain import compaction

    return Profile(
        profile_id=raw["profile_id"],
        bindings=tuple(_build_binding(b) for b in raw["document_bindings"]),
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
    from memnet.domain.guard import parse_rules

    return parse_rules(raw)


def _build_sensitivity(raw: Mapping[str, Any]) -> dict[str, SensitivityRules]:
    from memnet.domain.sensitivity import parse_rules

    rules = raw.get("sensitivity_rules")
    if rules is None:
        return {}
    ids = ["", *(b["binding_id"] for b in raw["document_bindings"])]
    return {binding_id: parse_rules(rules, binding_id) for binding_id in ids}


def _build_promotion(raw: Mapping[str, Any] | None) -> PromotionRules | None:
    from memnet.domain.promotion import parse_rules

    return None if raw is None else parse_rules(raw)


def _build_ranking(raw: Mapping[str, Any] | None) -> Ranking | None:
    from memnet.domain.ranking import Ranking

    return None if raw is None else Ranking.of(raw)


def _build_freshness(raw: Mapping[str, Any]) -> FreshnessRules | None:
    from memnet.domain import freshness

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


def _build_binding(raw: Mapping[str, Any]) -> Binding:
    limits = {pointers.parse(p): n for p, n in raw.get("array_limits", {}).items()}
    from memnet.domain import upsert

    lookups = {name: pointers.parse(p) for name, p in raw.get("lookup_fields", {}).items()}
    identity = upsert.parse_rules(raw.get("item_identity", {}))
    parsed = ("array_limits", "lookup_fields", "item_identity", "write_roles")
    fields = {k: v for k, v in raw.items() if k not in parsed}
    roles = frozenset(raw["write_roles"]) if "write_roles" in raw else None
    return Binding(
        **fields,
        array_limits=limits,
        lookup_fields=lookups,
        item_identity=identity,
        write_roles=roles,
    )


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


def fill_value(template: Any, fields: Mapping[str, Any]) -> Any:
    """``template`` with its fields filled: a string that is exactly ``{name}`` becomes
    ``fields[name]`` whatever its type; ``{text}``, ``{message_id}`` and ``{timestamp}``
    inside longer strings are replaced in one pass (a filled-in text is not scanned again,
    so a message cannot smuggle in another field)."""
    if isinstance(template, dict):
        return {key: fill_value(item, fields) for key, item in template.items()}
    if isinstance(template, list):
        return [fill_value(item, fields) for item in template]
    if not isinstance(template, str):
        return template
    whole = _TEMPLATE_VAR.fullmatch(template)
    if whole is not None and whole.group(1) in fields:
        return fields[whole.group(1)]
    return _TEMPLATE_VAR.sub(lambda m: str(fields.get(m.group(1), m.group(0))), template)


def statement_fields(
    text: str, message_id: str, timestamp: str, confidence: float, snapshot_uri: str
) -> dict[str, Any]:
    """What a ``value`` template may name, for one statement found in one message."""
    return {
        "text": text,
        "message_id": message_id,
        "timestamp": timestamp,
        "confidence": confidence,
        "evidence": {"message_ids": [message_id], "snapshot_uri": snapshot_uri},
    }


def template_fields(template: Any) -> frozenset[str]:
    """The ``{name}`` fields a ``value`` template (or one member of it) uses."""
    return frozenset(_TEMPLATE_VAR.findall(json.dumps(template)))


def template_problem(template: Any) -> str | None:
    """Why a ``value`` template cannot be filled, or None: an unknown ``{name}``, or
    ``{confidence}``/``{evidence}`` (not strings) inside a longer string."""
    stack = [template]
    while stack:
        node = stack.pop()
        if isinstance(node, dict | list):
            stack.extend(node.values() if isinstance(node, dict) else node)
        elif isinstance(node, str):
            whole = _TEMPLATE_VAR.fullmatch(node)
            for name in _TEMPLATE_VAR.findall(node):
                if name not in INLINE_FIELDS | WHOLE_FIELDS:
                    return f"unknown field {{{name}}}"
                if name in WHOLE_FIELDS and whole is None:
                    return f"{{{name}}} must be the whole string"
    return None
