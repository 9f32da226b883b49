"""Compaction planning (spec 15; issue 11): what to merge and trim so that a document is
within its binding's ``compaction_rules`` targets. Pure: the same content, rules and
``now`` give the same plan.

Per section (a content pointer naming an array) the rules give a target number of
items and what "low value" means (an ordered list of ``unverified``,
``lowest_confidence``, ``oldest``); per binding an optional target size. The plan first
merges redundant items (exact duplicates as canonical JSON, normalised duplicates of the
text fields, near duplicates at or above the section's threshold by
:func:`similarity` that do not :func:`contradict <contradicts>`), then trims the
lowest-value items until every target is met.
Items of a durable section whose confidence reaches the durable threshold are never
trimmed; of duplicates, one copy (the protected one) is always kept. The result is JSON
Patch ops on ``/content/...``: a ``replace`` per kept item whose evidence was merged,
then ``remove``s by descending index; or, when that would exceed the profile's ops per
patch, one ``replace`` of each changed section.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from memnet.domain import pointers, provenance
from memnet.domain.envelope import CONTENT, canonical, char_count
from memnet.domain.likeness import contradicts, normalised, similarity
from memnet.domain.pointers import Segments

LOW_VALUE = ("unverified", "lowest_confidence", "oldest")


@dataclass(frozen=True)
class SectionRules:
    """How one array section is compacted (docs/compaction.md)."""

    pointer: Segments
    max_items: int | None = None
    low_value: tuple[str, ...] = LOW_VALUE
    time_field: str | None = None
    confidence_field: str = "confidence"
    verified_field: str | None = None
    evidence_field: str = "evidence"
    text_fields: tuple[str, ...] = ()
    near_duplicate_threshold: float | None = None
    move_to_events: bool = True
    consolidated_field: str | None = None  # the kept item's list of merged items' ids
    id_field: str = "id"
    promote: PromoteRule | None = None
    string_items_as: str | None = None  # a string item's member once reshaped (an old shape)


@dataclass(frozen=True)
class PromoteRule:
    """When an item of a section moves to another section of the document (an episode
    held with confidence and used often becomes a lasting fact): every threshold given
    holds."""

    to: Segments
    min_confidence: float | None = None
    uses_pointer: Segments | None = None  # where the item counts its uses
    min_uses: int | None = None
    min_similar: int | None = None  # other items of the section alike to it
    similarity: float = 0.6


@dataclass(frozen=True)
class CompactionRules:
    """One binding's targets: its sections, and a size for the whole document."""

    sections: tuple[SectionRules, ...] = ()
    max_chars: int | None = None


@dataclass(frozen=True)
class Protection:
    """Which items are durable facts that compaction may never drop, and each item's
    sensitivity class (``rank(section, index, item)``; :mod:`memnet.domain.sensitivity`):
    items of different classes are never merged, or a caller that sees one could learn
    of, or erase, the other by writing its near duplicate."""

    durable_sections: tuple[Segments, ...] = ()
    min_durable: float = 0.0
    rank: Callable[[Segments, int, Any], int] | None = None


@dataclass(frozen=True)
class Removed:
    path: str  # where the item was, in the version the plan was made from
    item: Any
    reason: str  # trim | merge_duplicate | merge_near_duplicate
    to_event: bool


@dataclass
class Plan:
    ops: list[dict[str, Any]] = field(default_factory=list)
    removed: list[Removed] = field(default_factory=list)
    reason_codes: list[str] = field(default_factory=list)
    within_targets: bool = True
    why_not: list[str] = field(default_factory=list)


def parse_rules(raw: Mapping[str, Any]) -> CompactionRules:
    """One binding's ``compaction_rules``: ``max_<section>`` (the spec's form) and the
    richer ``sections``; a section named both ways takes ``max_items`` from ``sections``
    when it has one."""
    rich = {pointers.parse(p): body for p, body in raw.get("sections", {}).items()}
    legacy: dict[Segments, int] = {
        (key.removeprefix("max_"),): n
        for key, n in raw.items()
        if key.startswith("max_") and key != "max_chars"
    }
    order = list(rich) + [p for p in legacy if p not in rich]
    sections = tuple(_section(p, rich.get(p, {}), legacy.get(p)) for p in order)
    return CompactionRules(sections, raw.get("max_chars"))


def _section(pointer: Segments, body: Mapping[str, Any], legacy: int | None) -> SectionRules:
    return SectionRules(
        pointer=pointer,
        max_items=body.get("max_items", legacy),
        low_value=tuple(body.get("low_value", LOW_VALUE)),
        time_field=body.get("time_field"),
        confidence_field=body.get("confidence_field", "confidence"),
        verified_field=body.get("verified_field"),
        evidence_field=body.get("evidence_field", "evidence"),
        text_fields=tuple(body.get("text_fields", ())),
        near_duplicate_threshold=body.get("near_duplicate_threshold"),
        move_to_events=body.get("move_to_events", True),
        consolidated_field=body.get("consolidated_field"),
        id_field=body.get("id_field", "id"),
        promote=_promote_rule(body.get("promote")),
        string_items_as=body.get("string_items_as"),
    )


def _promote_rule(raw: Mapping[str, Any] | None) -> PromoteRule | None:
    if raw is None:
        return None
    uses = raw.get("uses_pointer")
    return PromoteRule(
        to=pointers.parse(raw["to"]),
        min_confidence=raw.get("min_confidence"),
        uses_pointer=None if uses is None else pointers.parse(uses),
        min_uses=raw.get("min_uses"),
        min_similar=raw.get("min_similar"),
        similarity=raw.get("similarity", 0.6),
    )


# -- item shapes -----------------------------------------------------------------------


def reshape_ops(content: Mapping[str, Any], rules: CompactionRules) -> list[dict[str, Any]]:
    """The ops that give each section with ``string_items_as`` one item shape: the
    section, with every string item ``s`` rewritten as ``{string_items_as: s}``, replaced
    whole (one op per section, however many items; docs/profiles.md "Item shapes").
    Empty when no such section holds a string."""
    ops = []
    for section in rules.sections:
        member, items = section.string_items_as, _array(content, section.pointer) or []
        if member is None or not any(isinstance(item, str) for item in items):
            continue
        value = [{member: item} if isinstance(item, str) else item for item in items]
        ops.append(
            {"op": "replace", "path": pointers.render((CONTENT, *section.pointer)), "value": value}
        )
    return ops


# -- text comparison -------------------------------------------------------------------


def text_of(item: Any, text_fields: tuple[str, ...]) -> str | None:
    """The item's text: a string item itself, else its ``text_fields`` joined; None when
    it has none (it then merges only as an exact duplicate)."""
    if isinstance(item, str):
        return item
    if not isinstance(item, dict):
        return None
    parts = [item[f] for f in text_fields if isinstance(item.get(f), str)]
    return " ".join(parts) if parts else None


def section_of(rules: CompactionRules, path: str) -> SectionRules | None:
    """The section a ``/content/...`` item path (or a proposal's ``target_path``,
    ``/section/-``) is in."""
    try:
        segments = pointers.parse(path)
    except ValueError:
        return None
    if segments[:1] == (CONTENT,):
        segments = segments[1:]
    return next((s for s in rules.sections if s.pointer == segments[:-1]), None)


def digest_text(item: Any, section: SectionRules | None, rules: CompactionRules) -> str:
    """The text an event digest keeps of a removed item: its section's ``text_fields``
    (as the duplicate check reads it); for a pending proposal (``candidate`` and
    ``target_path``), its candidate's text by the target section's fields; else its
    first string member; else its JSON (at most 200 chars)."""
    text = text_of(item, section.text_fields if section else ())
    if text is None and isinstance(item, dict) and "candidate" in item:
        target = item.get("target_path")
        aimed = section_of(rules, target) if isinstance(target, str) else None
        text = digest_text(item["candidate"], aimed, rules)
    if text is None and isinstance(item, dict):
        text = next((v for v in item.values() if isinstance(v, str)), None)
    return text if text is not None else json.dumps(item, ensure_ascii=False)[:200]


# -- the plan --------------------------------------------------------------------------


@dataclass
class _Entry:
    index: int
    item: Any
    protected: bool
    rank: int = 0  # its sensitivity class
    # index -1: promoted into this section by this plan (appended)

    @cached_property
    def exact(self) -> bytes:
        return canonical(self.item)


def plan(
    content: Mapping[str, Any],
    rules: CompactionRules,
    protection: Protection,
    envelope_chars: int = 0,
    max_ops: int | None = None,
) -> Plan:
    """Merge, then trim, until the targets hold; ``envelope_chars`` is what the document
    adds around ``content`` (``max_chars`` counts the whole document)."""
    result = Plan()
    kept: dict[Segments, list[_Entry]] = {}
    for section in rules.sections:
        entries = _entries(content, section, protection)
        if entries is None:
            continue
        kept[section.pointer] = _merge(entries, section, result)
    _promote(rules, kept, protection, result)
    _trim_counts(rules, kept, result)
    _trim_chars(content, rules, kept, result, envelope_chars)
    result.ops = _ops(content, kept, max_ops)
    result.reason_codes = sorted(
        {r.reason for r in result.removed} | ({"move_to_events"} if moved(result) else set())
    )
    return result


def moved(result: Plan) -> list[Removed]:
    """The removed items that go to the event digest."""
    return [r for r in result.removed if r.to_event]


def _entries(
    content: Mapping[str, Any], section: SectionRules, protection: Protection
) -> list[_Entry] | None:
    items = _array(content, section.pointer)
    if items is None:
        return None
    durable = any(pointers.is_within(section.pointer, d) for d in protection.durable_sections)
    rank = protection.rank or (lambda _section, _index, _item: 0)
    return [
        _Entry(
            i,
            item,
            durable and _confidence(item, section) >= protection.min_durable,
            rank(section.pointer, i, item),
        )
        for i, item in enumerate(items)
    ]


def _array(content: Mapping[str, Any], pointer: Segments) -> list[Any] | None:
    try:
        found = pointers.resolve(content, pointer)
    except KeyError:
        return None
    return found if isinstance(found, list) else None


def _confidence(item: Any, section: SectionRules) -> float:
    value = item.get(section.confidence_field) if isinstance(item, dict) else None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _field(item: Any, name: str | None) -> str:
    value = item.get(name) if isinstance(item, dict) and name else None
    return value if isinstance(value, str) else ""


def _worth(entry: _Entry, section: SectionRules) -> tuple[Any, ...]:
    """Higher is kept among duplicates: protected, most recently verified, most
    confident, newest, then the earliest position."""
    item = entry.item
    return (
        entry.protected,
        _reviewed(entry),
        _field(item, section.verified_field),
        _confidence(item, section),
        _field(item, section.time_field),
        -entry.index,
    )


def _merge(entries: list[_Entry], section: SectionRules, result: Plan) -> list[_Entry]:
    """Group duplicates (each item joins the first group whose first member it
    duplicates) and keep the most worthy member of each group, its evidence merged with
    the others'. A protected item is never removed as a near duplicate: near is not the
    same fact."""
    groups: list[list[_Entry]] = []
    for entry in entries:
        group = next((g for g in groups if _duplicate_kind(g[0], entry, section)), None)
        if group is None:
            groups.append([entry])
        else:
            group.append(entry)
    kept = []
    for members in groups:
        best = max(members, key=lambda e: _worth(e, section))
        kept += _kept(best, members, section, result)
    return sorted(kept, key=lambda e: e.index)


def _kept(best: _Entry, members: list[_Entry], section: SectionRules, out: Plan) -> list[_Entry]:
    stays, gone = [best], []
    for member in members:
        if member is best:
            continue
        kind = _duplicate_kind(best, member, section) or "merge_near_duplicate"
        if kind == "merge_near_duplicate" and member.protected:
            stays.append(member)
            continue
        gone.append(member)
        to_event = kind == "merge_near_duplicate" and section.move_to_events
        out.removed.append(_removed(section, member, kind, to_event))
    changes: dict[str, Any] = {}
    evidence = _merged_evidence(best, gone, section)
    if evidence is not None:
        changes[section.evidence_field] = evidence
    provenance = _provenance(best, gone, section)
    if provenance is not None:
        changes[section.consolidated_field or ""] = provenance
    if changes and isinstance(best.item, dict):
        stays[0] = _Entry(best.index, {**best.item, **changes}, best.protected, best.rank)
    return stays


def _provenance(best: _Entry, gone: list[_Entry], section: SectionRules) -> list[Any] | None:
    """The kept item's ``consolidated_field``: what it listed, then the ids of the items
    merged into it and of what they had consolidated; None when nothing is added (or
    the section keeps no provenance)."""
    field, key = section.consolidated_field, section.id_field
    if field is None or not isinstance(best.item, dict):
        return None
    listed = best.item.get(field)
    merged = list(listed) if isinstance(listed, list) else []
    for entry in gone:
        if not isinstance(entry.item, dict):
            continue
        earlier = entry.item.get(field)
        for found in [entry.item.get(key), *(earlier if isinstance(earlier, list) else [])]:
            if found is not None and found not in merged and found != best.item.get(key):
                merged.append(found)
    return None if merged == (listed if isinstance(listed, list) else []) else merged


def _duplicate_kind(first: _Entry, other: _Entry, section: SectionRules) -> str | None:
    if first.rank != other.rank:
        return None
    if first.exact == other.exact:
        return "merge_duplicate"
    a, b = text_of(first.item, section.text_fields), text_of(other.item, section.text_fields)
    if a is None or b is None:
        return None
    if normalised(a) == normalised(b):
        return "merge_duplicate"
    threshold = section.near_duplicate_threshold
    if threshold is not None and similarity(a, b) >= threshold and not contradicts(a, b):
        return "merge_near_duplicate"
    return None


def _merged_evidence(best: _Entry, others: list[_Entry], section: SectionRules) -> Any:
    """The kept item's evidence with the list members of the others' evidence added to
    its own lists (``message_ids``, say); None when nothing is added. Other members
    stay the kept item's: they are single values the schema cannot hold two of."""
    name = section.evidence_field
    mine = best.item.get(name) if isinstance(best.item, dict) else None
    if not isinstance(mine, dict):
        return None
    merged = {k: list(v) if isinstance(v, list) else v for k, v in mine.items()}
    for other in others:
        theirs = other.item.get(name) if isinstance(other.item, dict) else None
        for key, values in theirs.items() if isinstance(theirs, dict) else ():
            if isinstance(values, list) and isinstance(merged.get(key), list):
                merged[key] += [v for v in values if v not in merged[key]]
    return None if merged == mine else merged


def _removed(section: SectionRules, entry: _Entry, reason: str, to_event: bool) -> Removed:
    """An item the plan removes; only an item of the lowest sensitivity class goes to
    the event digest (events carry no classes: anyone who may search would read it)."""
    path = pointers.render((CONTENT, *section.pointer, str(entry.index)))
    return Removed(path, entry.item, reason, to_event and entry.rank == 0)


# -- trimming --------------------------------------------------------------------------


def _reviewed(entry: _Entry) -> int:
    """0 for an item a replay learned that no person has reviewed, else 1: such items
    go first, whatever the section's ``low_value`` says, so planted items (a pasted page
    can make many, dated as it likes) never push out what a person confirmed or what was
    there before (docs/security.md)."""
    return 0 if provenance.is_unreviewed_replay(entry.item) else 1


def _low_value_key(entry: _Entry, section: SectionRules) -> tuple[Any, ...]:
    """Lower is trimmed first, by the section's ``low_value`` order, then position."""
    item, key = entry.item, list[Any]()
    for criterion in section.low_value:
        if criterion == "unverified":
            key.append(1 if _field(item, section.verified_field) else 0)
        elif criterion == "lowest_confidence":
            key.append(_confidence(item, section))
        else:  # oldest: a missing time counts as oldest
            key.append(_field(item, section.time_field or section.verified_field))
    return (*key, entry.index)


def _trim_one(section: SectionRules, entries: list[_Entry], result: Plan) -> bool:
    """Remove the lowest-value unprotected entry of the lowest sensitivity class (what a
    caller below a class adds never pushes out that class's items while its own remain);
    False when every entry is protected."""
    open_ = [e for e in entries if not e.protected]
    if not open_:
        return False
    victim = min(open_, key=lambda e: (e.rank, _reviewed(e), *_low_value_key(e, section)))
    entries.remove(victim)
    result.removed.append(_removed(section, victim, "trim", section.move_to_events))
    return True


def _trim_counts(rules: CompactionRules, kept: dict[Segments, list[_Entry]], out: Plan) -> None:
    for section in rules.sections:
        entries = kept.get(section.pointer)
        if entries is None or section.max_items is None:
            continue
        while len(entries) > section.max_items:
            if not _trim_one(section, entries, out):
                out.within_targets = False
                out.why_not.append(
                    f"{pointers.render(section.pointer)}: {len(entries)} items, over its "
                    f"max_items {section.max_items}, are all protected durable facts"
                )
                break


def _trim_chars(
    content: Mapping[str, Any],
    rules: CompactionRules,
    kept: dict[Segments, list[_Entry]],
    out: Plan,
    envelope_chars: int,
) -> None:
    """Trim round-robin over the sections (each its own lowest-value item) until the
    document is within ``max_chars``."""
    target = rules.max_chars
    if target is None:
        return
    while envelope_chars + char_count(_rebuilt(content, kept)) > target:
        trimmed = [_trim_one(s, kept[s.pointer], out) for s in rules.sections if s.pointer in kept]
        if not any(trimmed):
            size = envelope_chars + char_count(_rebuilt(content, kept))
            out.within_targets = False
            out.why_not.append(
                f"{size} chars, over max_chars {target}, with nothing left that may be trimmed"
            )
            return


def _rebuilt(content: Mapping[str, Any], kept: dict[Segments, list[_Entry]]) -> Any:
    rebuilt: Any = {**content}
    for pointer, entries in kept.items():
        rebuilt = _with(rebuilt, pointer, [e.item for e in entries])
    return rebuilt


def _with(node: Any, pointer: Segments, value: Any) -> Any:
    if not pointer:
        return value
    head, rest = pointer[0], pointer[1:]
    if isinstance(node, list):
        copy = list(node)
        copy[int(head)] = _with(node[int(head)], rest, value)
        return copy
    return {**node, head: _with(node[head], rest, value)}


# -- ops -------------------------------------------------------------------------------


def _ops(
    content: Mapping[str, Any], kept: dict[Segments, list[_Entry]], max_ops: int | None
) -> list[dict[str, Any]]:
    """Granular ops (replaces of edited items, then removes by descending index), or
    one ``replace`` per changed section when they would exceed ``max_ops``."""
    granular: list[dict[str, Any]] = []
    whole: list[dict[str, Any]] = []
    for pointer, entries in kept.items():
        original = pointers.resolve(content, pointer)
        section_ops = _section_ops(pointer, original, entries)
        granular += section_ops
        if section_ops:
            path = pointers.render((CONTENT, *pointer))
            whole.append({"op": "replace", "path": path, "value": [e.item for e in entries]})
    return whole if max_ops is not None and len(granular) > max_ops else granular


def _section_ops(pointer: Segments, original: list[Any], entries: list[_Entry]) -> list[Any]:
    def at(index: int | str) -> str:
        return pointers.render((CONTENT, *pointer, str(index)))

    edits = [
        {"op": "replace", "path": at(e.index), "value": e.item}
        for e in entries
        if e.index >= 0 and canonical(e.item) != canonical(original[e.index])
    ]
    still = {e.index for e in entries}
    gone = [i for i in range(len(original) - 1, -1, -1) if i not in still]
    added = [{"op": "add", "path": at("-"), "value": e.item} for e in entries if e.index < 0]
    return edits + [{"op": "remove", "path": at(i)} for i in gone] + added


# -- promotion -------------------------------------------------------------------------


def _promote(
    rules: CompactionRules,
    kept: dict[Segments, list[_Entry]],
    protection: Protection,
    out: Plan,
) -> None:
    """Move each item that meets its section's ``promote`` thresholds to the end of the
    target section — never into a section where it would have another sensitivity
    class (a move must not declassify, nor classify, what a caller saw)."""
    rank = protection.rank or (lambda _section, _index, _item: 0)
    for section in rules.sections:
        rule, entries = section.promote, kept.get(section.pointer)
        target = kept.get(rule.to) if rule is not None else None
        if rule is None or entries is None or target is None:
            continue
        for entry in [e for e in entries if _promotable(e, entries, section, rule)]:
            if rank(rule.to, len(target), entry.item) != entry.rank:
                continue
            entries.remove(entry)
            target.append(_Entry(-1, entry.item, True, entry.rank))  # not trimmed this run
            out.removed.append(_removed(section, entry, "promote", False))


def _promotable(
    entry: _Entry, entries: list[_Entry], section: SectionRules, rule: PromoteRule
) -> bool:
    item = entry.item
    if rule.min_confidence is not None and _confidence(item, section) < rule.min_confidence:
        return False
    if rule.min_uses is not None and _uses(item, rule.uses_pointer or ()) < rule.min_uses:
        return False
    if rule.min_similar is not None:
        text = text_of(item, section.text_fields)
        alike = [
            other
            for other in entries
            if other is not entry
            and text is not None
            and (found := text_of(other.item, section.text_fields)) is not None
            and similarity(text, found) >= rule.similarity
        ]
        return len(alike) >= rule.min_similar
    return True


def _uses(item: Any, at: Segments) -> float:
    try:
        value = pointers.resolve(item, at)
    except KeyError:
        return 0
    return value if isinstance(value, int | float) and not isinstance(value, bool) else 0
