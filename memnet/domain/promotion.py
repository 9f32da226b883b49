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
from memnet.domain.likeness import contradicts, similarity
from memnet.domain.pointers import Segments
from memnet.domain.value_templates import fill_value

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

    def item(self, rules: PromotionRules, item_id: str | None = None) -> Any:
        """The item this pattern promotes to, from the profile's template: deterministic
        (``{timestamp}`` is the newest episode's), so promoting an unchanged pattern
        again writes nothing. ``item_id``: the id of the item promoted from this pattern
        before (:func:`known_ids`), else one derived from the oldest episode."""
        oldest = str(self.events[-1]["event_id"])
        fields = {
            "id": item_id or "promoted-" + hashlib.sha256(oldest.encode()).hexdigest()[:16],
            "text": str(self.events[0]["digest"]),
            "event_ids": self.event_ids,
            "count": len(self.events),
            "confidence": rules.confidence,
            "timestamp": str(self.events[0].get("timestamp", "")),
            "evidence": self.evidence(),
        }
        return fill_value(rules.value, fields)

    def known_id(self, known: Mapping[str, set[str]]) -> str | None:
        """The id of an existing item promoted from any of these episodes."""
        mine = set(self.event_ids)
        return next((item_id for item_id, ids in known.items() if ids & mine), None)

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


def known_ids(rules: PromotionRules, items: Sequence[Any]) -> dict[str, set[str]]:
    """Each existing item's id and the episodes it was promoted from, read where the
    template puts ``{id}`` and ``{event_ids}`` (none: nothing is known)."""
    id_at, ids_at = _field_path(rules.value, "id"), _field_path(rules.value, "event_ids")
    if id_at is None or ids_at is None:
        return {}
    found: dict[str, set[str]] = {}
    for item in items:
        try:
            item_id, ids = pointers.resolve(item, id_at), pointers.resolve(item, ids_at)
        except KeyError:
            continue
        if isinstance(item_id, str) and isinstance(ids, list):
            found[item_id] = {i for i in ids if isinstance(i, str)}
    return found


def _field_path(template: Any, name: str, at: Segments = ()) -> Segments | None:
    """Where in ``template`` the string ``{name}`` stands, whole."""
    if template == "{" + name + "}":
        return at
    if isinstance(template, dict):
        for key, value in template.items():
            found = _field_path(value, name, (*at, key))
            if found is not None:
                return found
    return None


def patterns(rules: PromotionRules, events: Sequence[Mapping[str, Any]]) -> list[Pattern]:
    """The groups of at least ``min_episodes`` alike episodes among ``events``, largest
    first. Events are taken newest first, equal times by event id, whatever order the
    index gave them."""
    groups: list[list[Mapping[str, Any]]] = []
    ordered = sorted(
        events,
        key=lambda e: (str(e.get("timestamp", "")), str(e.get("event_id", ""))),
        reverse=True,
    )
    for event in ordered:
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
