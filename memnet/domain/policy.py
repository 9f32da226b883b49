"""Write policy applied to parsed ops before they touch a document (spec 12, 18).

Writable-path allowlists and denylists compare whole JSON Pointer segments relative to
``/content``; envelope fields are never writable. Ops that reach a profile's durable
sections pass a confidence gate or are redirected to the pending section. Every
violation is collected with its op index and path and reported together.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from memnet.domain import freshness, pointers, proposals
from memnet.domain.bindings import Binding
from memnet.domain.envelope import CONTENT, MAX_DOCUMENT_DEPTH, char_count
from memnet.domain.patching import Op
from memnet.domain.pointers import Segments
from memnet.domain.profiles import Profile


@dataclass(frozen=True)
class Violation:
    code: str
    message: str
    op_index: int | None = None
    path: str | None = None

    def as_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.op_index is not None:
            body["op_index"] = self.op_index
        if self.path is not None:
            body["path"] = self.path
        return body


@dataclass(frozen=True)
class WriteIntent:
    """What the caller asserts about its write: confidence and evidence (spec 9.3)."""

    actor: str
    timestamp: str
    confidence: float | None = None
    evidence: Any = None
    reviewer: bool = False  # holds the review or admin role (proposal_rules.review_required)
    # op index -> why the poisoning guard holds it (memnet.domain.guard.REASONS)
    holds: Mapping[int, tuple[str, ...]] = field(default_factory=dict)


@dataclass
class Planned:
    """The ops to apply after redirection, what was redirected, and what was refused."""

    ops: list[Op] = field(default_factory=list)
    redirected: list[dict[str, Any]] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)


def plan_ops(
    profile: Profile,
    binding: Binding,
    ops: list[Op],
    intent: WriteIntent,
    content: Any = None,
) -> Planned:
    """Check ``ops`` against the profile and return what may be applied; given the
    current ``content``, a write that re-verifies a fact the freshness job downgraded
    also removes that proposal (:func:`memnet.domain.freshness.restore_ops`)."""
    planned = _checked(profile, binding, ops, intent, content)
    if content is not None and not planned.violations:
        planned.ops += _restores(profile, binding, content, planned.ops)
    return planned


def _restores(profile: Profile, binding: Binding, content: Any, ops: list[Op]) -> list[Op]:
    rules = profile.freshness
    pending = profile.confidence.pending_sections.get(binding.binding_id)
    sections = rules.sections.get(binding.binding_id) if rules else None
    if rules is None or pending is None or not sections or not isinstance(content, dict):
        return []
    return freshness.restore_ops(content, sections, pending, rules, ops)


def _checked(
    profile: Profile, binding: Binding, ops: list[Op], intent: WriteIntent, content: Any = None
) -> Planned:
    planned = Planned()
    if not binding.writable or not profile.writable_paths.get(binding.binding_id):
        message = f"binding {binding.binding_id!r} cannot be patched (admin PUT only)."
        planned.violations.append(Violation("PATH_NOT_WRITABLE", message))
        return planned
    if len(ops) > profile.max_ops_per_patch:
        planned.violations.append(
            Violation(
                "TOO_MANY_OPS", f"{len(ops)} ops exceed the limit of {profile.max_ops_per_patch}."
            )
        )
        return planned
    planned.violations.extend(_oversized(binding, ops))
    if planned.violations:
        return planned  # before any walk over the values
    for op in ops:
        problems = _path_violations(profile, binding, op)
        planned.violations.extend(problems)
        if problems:
            continue
        held = intent.holds.get(op.index)
        if held and op.writes():
            _hold(profile, binding, op, (intent, held), content, planned)
        else:
            _gate(profile, binding, op, intent, planned)
    return planned


def _hold(
    profile: Profile,
    binding: Binding,
    op: Op,
    why: tuple[WriteIntent, tuple[str, ...]],
    content: Any,
    out: Planned,
) -> None:
    """An op the poisoning guard holds: a proposal in the binding's pending section,
    with its reasons (a held ``remove`` proposes it, showing what it would remove); where
    the binding has none, or the op is a ``move`` or ``copy``, refused with the first
    reason as the code."""
    intent, reasons = why
    pending = profile.confidence.pending_sections.get(binding.binding_id)
    if pending is None or op.op not in ("add", "replace", "remove"):
        message = f"held by the poisoning guard ({', '.join(reasons)}); nothing was written."
        out.violations.append(Violation(reasons[0].upper(), message, op.index, op.path))
        return
    if op.op == "remove":
        try:
            current = pointers.resolve(content, op.segments[1:])
        except KeyError:
            current = None
        op = Op(op.index, "remove", op.path, op.segments, current)
    _redirect(pending, op, intent, "held", out, reasons)


def _oversized(binding: Binding, ops: list[Op]) -> list[Violation]:
    """Ops whose value alone is larger than the whole document may be, or nests deeper
    than a document may: refused before anything walks or applies them (the body limit
    lets one value hold hundreds of thousands of items)."""
    found = []
    for op in ops:
        if op.op in ("add", "replace") and char_count(op.value) > binding.max_chars:
            message = f"the value alone exceeds the binding's {binding.max_chars} chars."
            found.append(Violation("MAX_CHARS_EXCEEDED", message, op.index, op.path))
        elif op.op in ("add", "replace") and pointers.depth_exceeds(
            op.value, MAX_DOCUMENT_DEPTH - len(op.segments)
        ):
            message = f"the document would nest deeper than {MAX_DOCUMENT_DEPTH} levels."
            found.append(Violation("DOCUMENT_TOO_DEEP", message, op.index, op.path))
    return found


def _path_violations(profile: Profile, binding: Binding, op: Op) -> list[Violation]:
    if not op.writes():
        return []
    found = [_writable(profile, binding, op, seg) for seg in _written(op)]
    found += [_denied(profile, binding, op, seg) for seg in _touched(op)]
    return [v for v in found if v is not None]


def _written(op: Op) -> list[Segments]:
    moved_from = [op.from_segments] if op.op == "move" and op.from_segments is not None else []
    return [op.segments, *moved_from]


def _touched(op: Op) -> list[Segments]:
    source = [op.from_segments] if op.from_segments is not None else []
    inner = list(pointers.walk(op.value, op.segments)) if op.op in ("add", "replace") else []
    return [*source, op.segments, *inner]


def _writable(profile: Profile, binding: Binding, op: Op, segments: Segments) -> Violation | None:
    if segments[:1] != (CONTENT,) or len(segments) == 1:
        return Violation(
            "ENVELOPE_READ_ONLY",
            "only paths below /content can be written.",
            op.index,
            pointers.render(segments),
        )
    rules = profile.writable_paths.get(binding.binding_id, ())
    if binding.writable and any(pointers.is_within(segments[1:], r) for r in rules):
        return None
    return Violation(
        "PATH_NOT_WRITABLE",
        f"binding {binding.binding_id!r} does not allow writes here.",
        op.index,
        pointers.render(segments),
    )


def _denied(profile: Profile, binding: Binding, op: Op, segments: Segments) -> Violation | None:
    patterns = profile.denied_paths.get(binding.binding_id, ())
    if any(pointers.matches_pattern(segments[1:], p) for p in patterns):
        return Violation(
            "DENIED_PATH",
            DENIED,
            op.index,
            pointers.render(segments),
        )
    return None


def _gate(profile: Profile, binding: Binding, op: Op, intent: WriteIntent, out: Planned) -> None:
    rules = profile.confidence
    touch = _durable_touch(profile, binding, op)
    if touch is None or not op.writes():
        _auto_apply_gate(profile, op, intent, out)
        return
    shortfall = _durable_shortfall(profile, intent)
    redirectable = touch == "inside" and op.op in ("add", "replace")
    if shortfall is None:
        out.ops.append(op)
    elif redirectable and binding.binding_id in rules.pending_sections:
        _redirect(rules.pending_sections[binding.binding_id], op, intent, shortfall, out)
    else:
        message = _SHORTFALL[shortfall]
        out.violations.append(Violation(shortfall.upper(), message, op.index, op.path))


def _durable_touch(profile: Profile, binding: Binding, op: Op) -> str | None:
    """``inside`` when the op writes within a durable section, ``ancestor`` when it
    writes a parent of one (replacing or removing the object that holds it), else None."""
    sections = profile.confidence.durable_sections.get(binding.binding_id, ())
    for written in (seg[1:] for seg in _written(op) if seg[:1] == (CONTENT,)):
        if any(pointers.is_within(written, s) for s in sections):
            return "inside"
        if any(pointers.is_within(s, written) for s in sections):
            return "ancestor"
    return None


def change_violations(
    profile: Profile, binding: Binding, before: Any, after: Any
) -> list[Violation]:
    """What the checks on the resulting document find about the change itself: the
    denylist over what it creates or changes, and the targets of new proposals."""
    return denied_changes(profile, binding, before, after) + pending_violations(
        profile, binding, before, after
    )


def denied_changes(profile: Profile, binding: Binding, before: Any, after: Any) -> list[Violation]:
    """Denylisted fields that the write creates or changes, wherever the value came from
    (an op's value, or a ``copy``/``move`` of existing data), including inside the
    ``candidate`` of a pending item it adds or changes, placed at its ``target_path``
    (:mod:`memnet.domain.proposals`)."""
    patterns = profile.denied_paths.get(binding.binding_id, ())
    if not patterns:
        return []
    old = before.get(CONTENT, {}) if isinstance(before, dict) else {}
    new = after[CONTENT]
    paths = [
        pointers.render((CONTENT, *segments))
        for segments in pointers.walk(new)
        if any(pointers.matches_pattern(segments, p) for p in patterns)
        and _changed(old, new, segments)
    ]
    pending = profile.confidence.pending_sections.get(binding.binding_id)
    for index, item in proposals.fresh(old, new, pending) if pending is not None else ():
        paths += proposals.denied_members(index, item, pending or (), patterns)
    return [Violation("DENIED_PATH", DENIED, path=path) for path in paths]


def pending_violations(
    profile: Profile, binding: Binding, before: Any, after: Any
) -> list[Violation]:
    """A pending item that the write adds or changes proposes a write: its
    ``target_path`` must be a path the binding lets ops write."""
    pending = profile.confidence.pending_sections.get(binding.binding_id)
    if pending is None:
        return []
    old = before.get(CONTENT, {}) if isinstance(before, dict) else {}
    rules = profile.writable_paths.get(binding.binding_id, ())
    return [
        Violation(
            "PENDING_TARGET_NOT_WRITABLE",
            proposals.NOT_WRITABLE,
            path=pointers.render((CONTENT, *pending, str(index), "target_path")),
        )
        for index, item in proposals.fresh(old, after[CONTENT], pending)
        if not proposals.writable(item, rules)
    ]


def _changed(old: Any, new: Any, segments: Segments) -> bool:
    try:
        return bool(pointers.resolve(old, segments) != pointers.resolve(new, segments))
    except KeyError:
        return True


DENIED = "this field is denylisted by the profile."
_SHORTFALL = {
    "confidence_below_threshold": "durable sections need confidence at or above the threshold.",
    "evidence_required": "durable sections need an evidence pointer.",
    "review_required": "durable sections of this profile are written by review only.",
}


def _durable_shortfall(profile: Profile, intent: WriteIntent) -> str | None:
    rules = profile.confidence
    if profile.proposals.review_required and not intent.reviewer:
        return "review_required"
    if intent.confidence is None or intent.confidence < rules.min_durable:
        return "confidence_below_threshold"
    if rules.require_evidence and not intent.evidence:
        return "evidence_required"
    return None


def _auto_apply_gate(profile: Profile, op: Op, intent: WriteIntent, out: Planned) -> None:
    threshold = profile.confidence.min_auto_apply
    if op.writes() and intent.confidence is not None and intent.confidence < threshold:
        out.violations.append(
            Violation(
                "CONFIDENCE_BELOW_THRESHOLD",
                f"confidence {intent.confidence} is below min_confidence_for_auto_apply.",
                op.index,
                op.path,
            )
        )
    else:
        out.ops.append(op)


def _redirect(
    pending: Segments,
    op: Op,
    intent: WriteIntent,
    reason: str,
    out: Planned,
    reasons: tuple[str, ...] = (),
) -> None:
    target = pointers.render((CONTENT, *pending, "-"))
    proposal: dict[str, Any] = {
        "candidate": op.value,
        "target_path": pointers.render(op.segments[1:]),
        "op": op.op,
        "confidence": intent.confidence,
        "evidence": intent.evidence,
        "proposed_at": intent.timestamp,
        "proposed_by": intent.actor,
    }
    if reasons:
        proposal["reasons"] = list(reasons)
    out.ops.append(
        Op(index=op.index, op="add", path=target, segments=pointers.parse(target), value=proposal)
    )
    redirected = {"op_index": op.index, "from_path": op.path, "to_path": target, "reason": reason}
    out.redirected.append({**redirected, "reasons": list(reasons)} if reasons else redirected)
