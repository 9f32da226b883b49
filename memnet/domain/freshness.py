"""Freshness (spec 22.3; issue 11): stale facts go back to the pending section, and a
write that confirms one brings it back. Pure.

A profile's ``freshness_rules`` name, per binding, the sections whose items age. An
item is stale when ``now`` is at or past its ``expires_field`` time (always); else, when
it has a known ``ttl_class_field`` class, past that class's age (days since
``verified_field``; a class of ``null``, ``permanent``, never ages); else (no class, or
one the rules do not name) past ``max_age_days`` since ``verified_field``. The class
decides when set: ``max_age_days`` never shortens a ``long`` or ``permanent`` fact. An
item without a readable verification time ages by ``expires_field`` alone. A stale item is removed
from its section and added to the binding's pending section as a proposal in the shape
the write policy's redirection uses, proposed by :data:`FRESHNESS_CALLER`.

Restore: a write that adds (at or above the durable gate) to a freshness section an
item whose normalised text equals a freshness proposal's candidate also removes that
proposal (:func:`restore_ops`), so the fact is back, verified now, and not also pending.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from memnet.domain import pointers
from memnet.domain.envelope import CONTENT
from memnet.domain.likeness import normalised
from memnet.domain.patching import Op
from memnet.domain.pointers import Segments
from memnet.domain.timestamps import InvalidTimestamp, format_millis, parse_timestamp

FRESHNESS_CALLER = "memnet-freshness"
DEFAULT_TTL_CLASSES: Mapping[str, int | None] = {
    "short": 30,
    "medium": 180,
    "long": 730,
    "permanent": None,
}


@dataclass(frozen=True)
class FreshnessRules:
    sections: Mapping[str, tuple[Segments, ...]] = field(default_factory=dict)
    verified_field: str = "last_verified_at"
    expires_field: str = "expires_at"
    ttl_class_field: str = "ttl_class"
    ttl_classes: Mapping[str, int | None] = field(default_factory=lambda: DEFAULT_TTL_CLASSES)
    max_age_days: int | None = None
    text_fields: tuple[str, ...] = ()


def parse_rules(raw: Mapping[str, Any]) -> FreshnessRules:
    return FreshnessRules(
        sections={b: tuple(map(pointers.parse, ps)) for b, ps in raw.get("sections", {}).items()},
        verified_field=raw.get("verified_field", "last_verified_at"),
        expires_field=raw.get("expires_field", "expires_at"),
        ttl_class_field=raw.get("ttl_class_field", "ttl_class"),
        ttl_classes=raw.get("ttl_classes", DEFAULT_TTL_CLASSES),
        max_age_days=raw.get("max_age_days"),
        text_fields=tuple(raw.get("text_fields", ())),
    )


@dataclass
class Downgrade:
    ops: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)  # where the stale items were
    why: dict[str, str] = field(default_factory=dict)  # path -> expired | ttl_class | max_age


def why_stale(item: Any, rules: FreshnessRules, now: datetime) -> str | None:
    """``expired``, ``ttl_class`` or ``max_age`` when the item is stale, else None."""
    if not isinstance(item, dict):
        return None
    expires = _time(item.get(rules.expires_field))
    if expires is not None and now >= expires:
        return "expired"
    verified = _time(item.get(rules.verified_field))
    if verified is None:
        return None
    ttl_class = item.get(rules.ttl_class_field)
    if ttl_class is not None and ttl_class in rules.ttl_classes:
        days = rules.ttl_classes[ttl_class]  # the class decides: null (permanent) never ages
        aged = days is not None and now > verified + timedelta(days=days)
        return "ttl_class" if aged else None
    if rules.max_age_days is not None and now > verified + timedelta(days=rules.max_age_days):
        return "max_age"
    return None


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return parse_timestamp(value)
    except InvalidTimestamp:
        return None


def downgrade(
    content: Mapping[str, Any],
    sections: tuple[Segments, ...],
    pending: Segments,
    rules: FreshnessRules,
    now: datetime,
    room: int | None = None,
) -> Downgrade:
    """Ops that move every stale item of ``sections`` to ``pending`` (at most ``room``
    items: the pending section's array limit); proposals first, then the removes by
    descending index."""
    result = Downgrade()
    adds: list[dict[str, Any]] = []
    removes: list[tuple[Segments, int]] = []
    for section in sections:
        for index, item in _items(content, section):
            reason = why_stale(item, rules, now)
            if reason is None or (room is not None and len(adds) >= room):
                continue
            path = pointers.render((CONTENT, *section, str(index)))
            result.paths.append(path)
            result.why[path] = reason
            adds.append(_proposal_op(section, item, pending, now))
            removes.append((section, index))
    removes.sort(key=lambda r: (r[0], -r[1]))
    result.ops = adds + [
        {"op": "remove", "path": pointers.render((CONTENT, *s, str(i)))} for s, i in removes
    ]
    return result


def _items(content: Mapping[str, Any], section: Segments) -> list[tuple[int, Any]]:
    try:
        found = pointers.resolve(content, section)
    except KeyError:
        return []
    return list(enumerate(found)) if isinstance(found, list) else []


def _proposal_op(section: Segments, item: Any, pending: Segments, now: datetime) -> dict[str, Any]:
    confidence = item.get("confidence")
    proposal = {
        "candidate": item,
        "target_path": pointers.render((*section, "-")),
        "op": "add",
        "confidence": confidence if isinstance(confidence, int | float) else None,
        "evidence": item.get("evidence") or None,
        "proposed_at": format_millis(now),
        "proposed_by": FRESHNESS_CALLER,
    }
    return {"op": "add", "path": pointers.render((CONTENT, *pending, "-")), "value": proposal}


# -- restore ---------------------------------------------------------------------------


def restore_ops(
    content: Mapping[str, Any],
    sections: tuple[Segments, ...],
    pending: Segments,
    rules: FreshnessRules,
    ops: list[Op],
) -> list[Op]:
    """Removes of the freshness proposals whose candidate's text a write's ``add`` or
    ``replace`` into a freshness section confirms (by descending index; appended after
    the write's own ops). None when the write itself touches the pending section (its
    indices would move under us)."""
    written = (op.segments[1:] for op in ops if op.writes())
    if any(pointers.is_within(w, pending) or pointers.is_within(pending, w) for w in written):
        return []
    confirmed = {_key(op.value, rules) for op in ops if _confirms(op, sections)} - {None}
    matches = [
        index
        for index, item in _items(content, pending)
        if isinstance(item, dict)
        and item.get("proposed_by") == FRESHNESS_CALLER
        and _key(item.get("candidate"), rules) in confirmed
    ]
    return [_remove(pending, index, n) for n, index in enumerate(sorted(matches, reverse=True))]


def _confirms(op: Op, sections: tuple[Segments, ...]) -> bool:
    return op.op in ("add", "replace") and op.segments[1:-1] in sections


def _key(item: Any, rules: FreshnessRules) -> str | None:
    text = _text(item, rules)
    return normalised(text) if text else None


def _text(item: Any, rules: FreshnessRules) -> str | None:
    """The item's text fields joined; without ``text_fields``, its string members other
    than the freshness fields."""
    if isinstance(item, str):
        return item
    if not isinstance(item, dict):
        return None
    skip = {rules.verified_field, rules.expires_field, rules.ttl_class_field}
    names = rules.text_fields or tuple(k for k in sorted(item) if k not in skip)
    parts = [item[n] for n in names if isinstance(item.get(n), str)]
    return " ".join(parts) or None


def _remove(pending: Segments, index: int, n: int) -> Op:
    path = pointers.render((CONTENT, *pending, str(index)))
    return Op(index=-1 - n, op="remove", path=path, segments=pointers.parse(path))
