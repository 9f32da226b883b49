"""The poisoning guard over a replay's checked plan (docs/security.md). Pure: no I/O.

:func:`memnet.domain.replay_contract.check_output` decides where an extractor's output
may write; :func:`review` decides what of it may apply without a person, by the
profile's ``guard_rules`` (:mod:`memnet.domain.guard`):

- the pending section belongs to the service: a patch that writes it, or copies or
  moves out of it, is refused (``PENDING_SECTION_RESERVED``, ``COPY_MOVE_FROM_PENDING``);
- in-value evidence naming another conversation, snapshot, user or tenant is refused
  (``EVIDENCE_MISMATCH``); then the server stamps every object the replay writes with
  evidence of its own (:meth:`~memnet.domain.guard.Source.stamp`), so forgetting the
  conversation retracts it whichever extractor wrote it;
- each op is *held* (a proposal with reasons, see :mod:`memnet.domain.policy`) when the
  section's ceiling does not let a replay make it (``trust_ceiling``), its value is not
  supported by the messages it cites of a trusted role (``evidence_unsupported``), it
  reads as an instruction or carries a secret (``instruction_like``, ``secret_like``),
  or it adds past the section's rates (``rate_limited``);
- timestamps in values later than the worker's clock plus the skew become that clock;
- a digest may tag only the transcript's project hint (``DIGEST_OUT_OF_SCOPE``), must
  not read as an instruction or carry a secret, and keeps only the keywords drawn from
  its text or its evidence.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from memnet.domain import guard_content, pointers
from memnet.domain.bindings import Binding
from memnet.domain.guard import GuardRules, Source, content_holds, evidence_pieces, foreign_evidence
from memnet.domain.patching import Op, parse_ops
from memnet.domain.pointers import Segments
from memnet.domain.replay_contract import (
    Digest,
    ExtractionRequest,
    Patch,
    Rejection,
    ReplayPlan,
    TargetDocument,
)
from memnet.domain.timestamps import InvalidTimestamp, format_timestamp, parse_timestamp
from memnet.domain.transcript import Message, Transcript

Similar = Callable[[str, str], float]  # cosine similarity of two texts, by an embedder
DAY = timedelta(days=1)


class _Refused(Exception):
    def __init__(self, code: str, reason: str) -> None:
        super().__init__(reason)
        self.code, self.reason = code, reason


@dataclass
class _Review:
    request: ExtractionRequest
    rules: GuardRules
    source: Source
    similar: Similar | None
    added: dict[tuple[str, Segments], int]
    learned: dict[tuple[str, Segments], int] = field(default_factory=dict)  # per section, once


def review(
    plan: ReplayPlan, request: ExtractionRequest, similar: Similar | None = None
) -> ReplayPlan:
    """``plan`` as the profile's guard lets it apply: refused parts moved to its
    rejections, held ops marked on their patch, evidence stamped."""
    rules = request.profile.guard
    if rules is None:
        return plan
    transcript = request.transcript
    source = Source(request.conversation_id, request.snapshot_uri, transcript.message_ids())
    state = _Review(request, rules, source, similar, {})
    out = ReplayPlan(rejected=list(plan.rejected))
    for digest in plan.digests:
        try:
            kept, dropped = _digest(digest, state)
        except _Refused as refused:
            out.rejected.append(Rejection("digest", digest.index, refused.code, refused.reason))
            continue
        out.digests.append(kept)
        if dropped:
            reason = f"keywords not drawn from the digest or its evidence: {sorted(dropped)}"
            out.rejected.append(
                Rejection("digest", digest.index, "DIGEST_KEYWORDS_DROPPED", reason)
            )
    for patch in plan.patches:
        try:
            out.patches.append(_patch(patch, state))
        except _Refused as refused:
            out.rejected.append(Rejection("patch", patch.index, refused.code, refused.reason))
    return out


def clamp_transcript(transcript: Transcript, uploaded: datetime, skew: timedelta) -> Transcript:
    """``transcript`` with every message timestamp later than its upload plus ``skew``
    set to the upload time: the uploader writes the timestamps, and a planted item must
    not win freshness by being dated in the future."""
    latest = uploaded + skew
    moment = format_timestamp(uploaded)

    def clamped(message: Message) -> Message:
        late = parse_timestamp(message.timestamp) > latest
        return replace(message, timestamp=moment) if late else message

    return replace(transcript, messages=tuple(clamped(m) for m in transcript.messages))


# -- digests -------------------------------------------------------------------------


def _digest(digest: Digest, state: _Review) -> tuple[Digest, set[str]]:
    hint = state.request.transcript.project_hint
    if any(project != hint for project in digest.project_ids):
        raise _Refused("DIGEST_OUT_OF_SCOPE", "project_ids may name only the transcript's project")
    for reason in guard_content.flags(digest.digest, state.rules.content):
        raise _Refused(f"DIGEST_{reason.upper()}", f"the digest is {reason.replace('_', '-')}")
    cited = _cited(state.request.transcript, digest.message_ids, None)
    drawn = guard_content.skeleton(guard_content.visible(f"{digest.digest}\n{cited}"))
    kept = tuple(k for k in digest.keywords if guard_content.skeleton(k) in drawn)
    return replace(digest, keywords=kept), set(digest.keywords) - set(kept)


# -- patches -------------------------------------------------------------------------


def _patch(patch: Patch, state: _Review) -> Patch:
    profile = state.request.profile
    binding = profile.binding(patch.binding_id)
    assert binding is not None  # check_output named it
    target = _target(state.request, patch)
    ops = parse_ops(patch.ops)
    _reserved(ops, profile.confidence.pending_sections.get(binding.binding_id))
    problem = foreign_evidence(evidence_pieces([o.value for o in ops]), _owner(state), state.source)
    if problem is not None:
        raise _Refused("EVIDENCE_MISMATCH", problem)
    cited = _cited(
        state.request.transcript, patch.message_ids, state.rules.roles(binding.binding_id)
    )
    stamp = state.source.stamp(patch.message_ids, state.request.now)
    holds: dict[int, tuple[str, ...]] = {}
    written = []
    for op in ops:
        reasons = _reasons(op, binding, target.content, cited, state)
        if reasons:
            holds[op.index] = reasons
        written.append(_stamped(op, stamp, state))
    return replace(patch, ops=[o.as_json() for o in written], holds=holds)


def _reserved(ops: list[Op], pending: Segments | None) -> None:
    if pending is None:
        return
    for op in ops:
        if pointers.is_within(op.segments[1:], pending) or pointers.is_within(
            pending, op.segments[1:]
        ):
            raise _Refused(
                "PENDING_SECTION_RESERVED", "only the service writes the pending section"
            )
        source = op.from_segments
        if source is not None and pointers.is_within(source[1:], pending):
            raise _Refused("COPY_MOVE_FROM_PENDING", "only a review takes an item out of pending")


def _reasons(op: Op, binding: Binding, content: Any, cited: str, state: _Review) -> tuple[str, ...]:
    rules, segments = state.rules, op.segments[1:]
    destructive = _destructive(op, content)
    ceiling = rules.ceiling(binding.binding_id, binding.in_context, segments)
    reasons = (
        ["trust_ceiling"] if ceiling == "pending" or (ceiling == "add" and destructive) else []
    )
    if op.op in ("add", "replace"):
        claim = guard_content.value_text(op.value)
        if not _supported(claim, cited, state):
            reasons.append("evidence_unsupported")
        reasons += content_holds(rules, op.value)
    if (
        op.op == "add"
        and not destructive
        and not reasons
        and _over_rate(binding, segments, content, state)
    ):
        reasons.append("rate_limited")
    return tuple(reasons)


def _destructive(op: Op, content: Any) -> bool:
    """Whether ``op`` removes, replaces or moves data that exists: an ``add`` that
    appends, inserts into an array or creates a member is not."""
    if op.op in ("remove", "replace", "move"):
        return True
    if op.op != "add":
        return False
    parent, last = op.segments[1:-1], op.segments[-1]
    try:
        holder = pointers.resolve(content, parent)
    except KeyError:
        return False
    return isinstance(holder, dict) and last in holder


def _supported(claim: str, cited: str, state: _Review) -> bool:
    if not cited.strip():
        return False  # it cites no message of a role trusted for this binding
    if guard_content.support(claim, cited) >= state.rules.min_support:
        return True
    similar = state.similar
    return similar is not None and similar(claim, cited) >= state.rules.min_similarity


def _over_rate(binding: Binding, segments: Segments, content: Any, state: _Review) -> bool:
    """Counts this op against the section's rates: per conversation, and per day with
    the items stamped as learned in the last day (a concurrent replay of another
    conversation may pass the daily rate by its own per-conversation rate at most)."""
    section = _section(segments)
    key = (binding.binding_id, section)
    state.added[key] = state.added.get(key, 0) + 1
    if state.added[key] > state.rules.per_conversation:
        return True
    if key not in state.learned:
        state.learned[key] = _learned_today(content, section, state.request.now)
    return state.learned[key] + state.added[key] > state.rules.per_day


def _section(segments: Segments) -> Segments:
    """The array an appended item joins (``/x/-`` or ``/x/3``), else the member written."""
    last = segments[-1] if segments else ""
    return segments[:-1] if last == "-" or pointers.is_digits(last) else segments


def _learned_today(content: Any, section: Segments, now: str) -> int:
    try:
        items = pointers.resolve(content, section)
    except KeyError:
        return 0
    since = parse_timestamp(now) - DAY
    count = 0
    for item in items if isinstance(items, list) else []:
        learned = [p.get("learned_at") for p in evidence_pieces({"item": item})]
        count += any(_after(moment, since) for moment in learned)
    return count


def _after(moment: Any, since: datetime) -> bool:
    try:
        return parse_timestamp(moment) >= since
    except InvalidTimestamp:
        return False


def _stamped(op: Op, stamp: dict[str, Any], state: _Review) -> Op:
    if op.op not in ("add", "replace"):
        return op
    value = _clamped(op.value, parse_timestamp(state.request.now), state.rules.max_skew)
    if isinstance(value, dict):
        value = {**value, "evidence": stamp}
    return replace(op, value=value)


def _clamped(value: Any, now: datetime, skew: timedelta) -> Any:
    """``value`` with every timestamp later than ``now`` plus ``skew`` set to ``now``."""
    if isinstance(value, dict):
        return {k: _clamped(v, now, skew) for k, v in value.items()}
    if isinstance(value, list):
        return [_clamped(v, now, skew) for v in value]
    if isinstance(value, str) and _after(value, now + skew):
        return format_timestamp(now)
    return value


def _cited(
    transcript: Transcript, message_ids: tuple[str, ...], roles: frozenset[str] | None
) -> str:
    """The text of the cited messages (of ``roles``, when given)."""
    wanted = set(message_ids)
    return "\n".join(
        m.text for m in transcript.messages if m.id in wanted and (roles is None or m.role in roles)
    )


def _target(request: ExtractionRequest, patch: Patch) -> TargetDocument:
    return next(
        t for t in request.targets if (t.binding_id, t.path) == (patch.binding_id, patch.path)
    )


def _owner(state: _Review) -> str:
    """The snapshot's user prefix (``tenants/{t}/users/{u}/``)."""
    parts = state.source.snapshot_uri.removeprefix("blob://").split("/")
    return "/".join(parts[:4]) + "/"
