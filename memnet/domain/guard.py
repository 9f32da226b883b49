"""The poisoning guard's policy (``guard_rules``, docs/security.md): how far a replay is
trusted, section by section, and what its evidence must show. Pure: no I/O.

A replay writes what a model (or a rule) read in a transcript that anyone who can upload
one controls, so the guard decides, per op, whether it applies or is *held*: redirected
to the binding's pending section as a proposal with its :data:`REASONS`, or refused
where the binding has none. The profile sets the ceiling per section, the message roles
trusted as evidence per binding, the support a value needs from what it cites, the
rates, the clock skew and the content patterns; no section is named here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from memnet.domain import guard_content, pointers
from memnet.domain.guard_content import ContentRules
from memnet.domain.pointers import Segments

CEILINGS = ("pending", "add", "all")
REASONS = (
    "trust_ceiling",
    "evidence_unsupported",
    "instruction_like",
    "secret_like",
    "rate_limited",
)
DEFAULT_ROLES = frozenset({"user"})


@dataclass(frozen=True)
class GuardRules:
    ceilings: Mapping[str, Mapping[Segments, str]] = field(default_factory=dict)
    trusted_roles: Mapping[str, frozenset[str]] = field(default_factory=dict)
    min_support: float = 0.5
    min_similarity: float = 0.75
    per_conversation: int = 5
    per_day: int = 20
    max_skew: timedelta = timedelta(seconds=300)
    content: ContentRules = field(default_factory=lambda: guard_content.parse_content_rules(None))

    def ceiling(self, binding_id: str, in_context: bool, segments: Segments) -> str:
        """The ceiling of the section ``segments`` (below ``/content``) lies in: the
        longest listed section holding it, else ``pending`` for a binding that reaches
        context and ``add`` for one that does not."""
        listed = self.ceilings.get(binding_id, {})
        holding = [s for s in listed if pointers.is_within(segments, s)]
        if holding:
            return listed[max(holding, key=len)]
        return "pending" if in_context else "add"

    def roles(self, binding_id: str) -> frozenset[str]:
        return self.trusted_roles.get(binding_id, DEFAULT_ROLES)


def parse_rules(raw: Mapping[str, Any] | None) -> GuardRules | None:
    """``guard_rules`` of a meta-schema-valid profile (None: no guard). A content
    pattern that does not compile raises ``ValueError`` (the loader names the field)."""
    if raw is None:
        return None
    rates = raw.get("replay_rates", {})
    return GuardRules(
        ceilings={
            binding: {pointers.parse(p): c for p, c in sections.items()}
            for binding, sections in raw.get("replay_ceiling", {}).items()
        },
        trusted_roles={b: frozenset(r) for b, r in raw.get("trusted_roles", {}).items()},
        min_support=raw.get("min_support", 0.5),
        min_similarity=raw.get("min_similarity", 0.75),
        per_conversation=rates.get("per_conversation", 5),
        per_day=rates.get("per_day", 20),
        max_skew=timedelta(seconds=raw.get("max_clock_skew_seconds", 300)),
        content=guard_content.parse_content_rules(raw.get("content")),
    )


def content_holds(rules: GuardRules, value: Any) -> list[str]:
    """The content reasons a written value is held for (``instruction_like``,
    ``secret_like``): what every guarded writer checks, live or replayed."""
    return guard_content.flags(guard_content.value_text(value), rules.content)


def evidence_pieces(value: Any) -> list[dict[str, Any]]:
    """Every piece of in-value evidence in ``value``: the objects held by an
    ``evidence`` member (an object, or a list of them) at any depth."""
    found: list[dict[str, Any]] = []
    for key, node in pointers.members(value, lambda name: name != "evidence"):
        if key == "evidence":
            found += [
                p for p in (node if isinstance(node, list) else [node]) if isinstance(p, dict)
            ]
    return found


def foreign_evidence(pieces: list[dict[str, Any]], owner: str, source: Source | None) -> str | None:
    """Why a piece of evidence names another tenant, user or conversation, or None.
    ``owner`` is the document's user prefix (``tenants/{t}/users/{u}/``); ``source`` the
    replay's conversation, when a replay writes (its evidence must name only that)."""
    for piece in pieces:
        uri = piece.get("snapshot_uri")
        if uri is not None and not (isinstance(uri, str) and uri.startswith(f"blob://{owner}")):
            return "evidence names a snapshot of another user or tenant"
        if source is None:
            continue
        if uri is not None and uri != source.snapshot_uri:
            return "evidence names another snapshot than the one replayed"
        if piece.get("conversation_id", source.conversation_id) != source.conversation_id:
            return "evidence names another conversation than the one replayed"
        ids = piece.get("message_ids", [])
        if not isinstance(ids, list) or not set(map(str, ids)) <= source.message_ids:
            return "evidence names messages the transcript lacks"
    return None


@dataclass(frozen=True)
class Source:
    """The conversation a replay learns from, as the server knows it."""

    conversation_id: str
    snapshot_uri: str
    message_ids: frozenset[str]

    def stamp(self, message_ids: tuple[str, ...], learned_at: str) -> dict[str, Any]:
        """The evidence the server sets on what the replay writes."""
        return {
            "conversation_id": self.conversation_id,
            "snapshot_uri": self.snapshot_uri,
            "message_ids": list(message_ids),
            "learned_at": learned_at,
        }
