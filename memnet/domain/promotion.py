"""Promoting repeated episodes into a semantic item (issue 15, capability 6;
docs/profiles.md "Promotion"). Pure: no I/O.

A profile's ``promotion_rules`` say which of a user's event digests count as episodes
(``source_types``, ``min_importance``), how alike they must be (``similarity``, the
compaction job's measure, with its contradiction guard) and how many make a pattern
(``min_episodes``). Episodes are grouped newest first, each joining the first group whose
newest member it is alike to; a group large enough becomes one item, written from the
profile's ``value`` template at ``pointer`` of ``binding``. The item's ``{id}`` derives
from the group's oldest episode, so promoting again as more episodes join replaces the
item (with ``item_identity`` on the section) instead of adding another.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memnet.domain import pointers
from memnet.domain.compaction import contradicts, similarity
from memnet.domain.pointers import Segments
from memnet.domain.profiles import fill_value

FIELDS = frozenset({"id", "text", "event_ids", "count", "confidence", "timestamp", "evidence"})


@dataclass(frozen=True)
class PromotionRules:
    binding_id: str
    pointer: Segments  # content-relative, ending in "-" (an append)
    value: Any
    min_episodes: int = 3
    similarity: float = 0.6
    confidence: float = 0.9
    min_importance: float = 0.0
    source_types: tuple[str, ...] = ()
    max_events: int = 100


def parse_rules(raw: Mapping[str, Any]) -> PromotionRules:
    """From a profile's ``promotion_rules`` (already meta-schema valid)."""
    return PromotionRules(
        binding_id=raw["binding"],
        pointer=pointers.parse(raw["pointer"]),
        value=raw["value"],
        min_episodes=raw.get("min_episodes", 3),
        similarity=raw.get("similarity", 0.6),
        confidence=raw.get("confidence", 0.9),
        min_importance=raw.get("min_importance", 0.0),
        source_types=tuple(raw.get("source_types", ())),
        max_events=raw.get("max_events", 100),
    )


@dataclass(frozen=True)
class Pattern:
    """A group of alike episodes, newest first."""

    events: tuple[Mapping[str, Any], ...]

    @property
    def event_ids(self) -> list[str]:
        return [str(e["event_id"]) for e in self.events]

    def item(self, rules: PromotionRules, timestamp: str) -> Any:
        """The item this pattern promotes to, from the profile's template."""
        oldest = str(self.events[-1]["event_id"])
        fields = {
            "id": "promoted-" + hashlib.sha256(oldest.encode()).hexdigest()[:16],
            "text": str(self.events[0]["digest"]),
            "event_ids": self.event_ids,
            "count": len(self.events),
            "confidence": rules.confidence,
            "timestamp": timestamp,
            "evidence": self.evidence(),
        }
        return fill_value(rules.value, fields)

    def evidence(self) -> dict[str, Any]:
        """Where the item's text came from: the newest episode's conversation (its
        ``evidence.conversation_id`` or ``snapshot_uri``), so that forgetting that
        conversation retracts the item (memnet.domain.retraction), and the episodes."""
        newest = self.events[0]
        found: dict[str, Any] = {"event_ids": self.event_ids}
        given = newest.get("evidence")
        if isinstance(given, Mapping) and isinstance(given.get("conversation_id"), str):
            found["conversation_id"] = given["conversation_id"]
        if isinstance(newest.get("snapshot_uri"), str):
            found["snapshot_uri"] = newest["snapshot_uri"]
        return found


def patterns(rules: PromotionRules, events: Sequence[Mapping[str, Any]]) -> list[Pattern]:
    """The groups of at least ``min_episodes`` alike episodes among ``events`` (newest
    first), largest first."""
    groups: list[list[Mapping[str, Any]]] = []
    for event in events:
        if not _episode(rules, event):
            continue
        text = str(event.get("digest", ""))
        group = next((g for g in groups if _alike(rules, str(g[0]["digest"]), text)), None)
        if group is None:
            groups.append([event])
        else:
            group.append(event)
    found = [Pattern(tuple(g)) for g in groups if len(g) >= rules.min_episodes]
    return sorted(found, key=lambda p: -len(p.events))


def _episode(rules: PromotionRules, event: Mapping[str, Any]) -> bool:
    if rules.source_types and event.get("source_type") not in rules.source_types:
        return False
    importance = event.get("importance")
    if isinstance(importance, int | float) and not isinstance(importance, bool):
        return importance >= rules.min_importance
    return rules.min_importance <= 0


def _alike(rules: PromotionRules, a: str, b: str) -> bool:
    return similarity(a, b) >= rules.similarity and not contradicts(a, b)
