"""Pending items as proposals (spec 12, 22.2): an item of a binding's pending section
proposes writing its ``candidate`` at its ``target_path``. A proposal that a write adds
or changes is checked as that write would be: its target must be a path the binding
lets ops write, and the denylist holds inside its candidate, at the target."""

from __future__ import annotations

import base64
import binascii
import re
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from memnet.domain import pointers
from memnet.domain.bindings import Binding
from memnet.domain.compaction import Plan, Removed
from memnet.domain.envelope import CONTENT, canonical
from memnet.domain.errors import BadRequest
from memnet.domain.pointers import Segments
from memnet.domain.profiles import Profile
from memnet.domain.timestamps import parse_timestamp

NOT_WRITABLE = "a pending item's target_path must be a path this binding lets ops write."


def fresh(old: Any, new: Any, pending: Segments) -> list[tuple[int, Any]]:
    """``(index, item)`` of each pending item of content ``new`` that content ``old`` did
    not hold. Items compare as canonical JSON without their :data:`ID_MEMBER` (the
    service's, not the writer's), as a multiset: adding an item before others, or
    reordering them, changes no other item; changing any other member of one (its
    ``target_path`` alone, say) makes it fresh."""
    kept = Counter(canonical(_sans_id(item)) for item in items_at(old, pending))
    found = []
    for index, item in enumerate(items_at(new, pending)):
        key = canonical(_sans_id(item))
        if kept[key]:
            kept[key] -= 1
        else:
            found.append((index, item))
    return found


def _sans_id(item: Any) -> Any:
    if not isinstance(item, dict) or ID_MEMBER not in item:
        return item
    return {key: value for key, value in item.items() if key != ID_MEMBER}


def items_at(content: Any, pending: Segments) -> list[Any]:
    try:
        found = pointers.resolve(content, pending)
    except KeyError:
        return []
    return found if isinstance(found, list) else []


def target_of(item: Any) -> Segments | None:
    """The parsed ``target_path`` of a pending item, or None."""
    target = item.get("target_path") if isinstance(item, dict) else None
    try:
        return pointers.parse(target) if isinstance(target, str) else None
    except ValueError:
        return None


def writable(item: Any, rules: tuple[Segments, ...]) -> bool:
    target = target_of(item)
    return target is not None and any(pointers.is_within(target, r) for r in rules)


def denied_members(
    index: int, item: Any, pending: Segments, patterns: tuple[Segments, ...]
) -> Iterator[str]:
    """The document paths of the members of the item's candidate (the candidate itself
    included) that the denylist holds when they are placed at its target."""
    target = target_of(item)
    if target is None or not isinstance(item, dict):
        return
    base = (CONTENT, *pending, str(index), "candidate")
    for inner in pointers.walk(item.get("candidate")):
        if any(pointers.matches_pattern((*target, *inner), p) for p in patterns):
            yield pointers.render((*base, *inner))


# -- review (issue 15, capability 4; docs/proposals.md) --------------------------------------

ID_MEMBER = "proposal_id"  # a pending item's id, set by the service (docs/proposals.md)
PROPOSAL_ID = re.compile(r"p([A-Za-z0-9_-]{1,800})\.([0-9a-f]{32})")
STATUSES = ("pending", "approved", "rejected", "expired", "edited")  # docs/proposals.md


def proposal_id(namespace: str, path: str, token: str) -> str:
    """A pending item's id: its document's address (base64url, so the id alone finds
    the document) and ``token``, 32 random hex digits drawn when the item was written:
    nothing about the item can be derived from the id, nor the id from the item."""
    where = base64.urlsafe_b64encode(f"{namespace}/{path}".encode()).decode().rstrip("=")
    return f"p{where}.{token}"


def stamps(old: Any, new: Any, pending: Segments, namespace: str, path: str) -> list[int]:
    """The indexes of the pending items of content ``new`` (in document ``namespace`` /
    ``path``) that need a new id: each object item that ``old`` did not hold exactly,
    id and all (a new item, a changed one: a reviewer approves what the id named when it
    read the queue, never a later change of it; a copy: ids are unique), and each
    without an id of its own document (none, or one a writer made up)."""
    kept = Counter(canonical(item) for item in items_at(old, pending))
    found = []
    for index, item in enumerate(items_at(new, pending)):
        if not isinstance(item, dict):
            continue
        key = canonical(item)
        if kept[key] and id_of(item, namespace, path) is not None:
            kept[key] -= 1
        else:
            found.append(index)
    return found


def id_of(item: Any, namespace: str, path: str) -> str | None:
    """A pending item's id, if it has one naming its own document."""
    value = item.get(ID_MEMBER) if isinstance(item, dict) else None
    if not isinstance(value, str) or parse_proposal_id(value) != (namespace, path):
        return None
    return value


def parse_proposal_id(value: str) -> tuple[str, str] | None:
    """The ``(namespace, path)`` a proposal id names, or None if it is not one."""
    found = PROPOSAL_ID.fullmatch(value)
    if found is None:
        return None
    encoded = found.group(1)
    try:
        where = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None
    namespace, _, path = where.partition("/")
    return (namespace, path) if namespace and path else None


def expires_at(item: Any, ttl: timedelta | None) -> datetime | None:
    """When a pending item expires: its ``proposed_at`` plus the profile's TTL; None
    without a TTL. An item without a readable ``proposed_at`` never expires (it cannot
    be told apart from a fresh one)."""
    proposed = item.get("proposed_at") if isinstance(item, dict) else None
    if ttl is None or not isinstance(proposed, str):
        return None
    try:
        return parse_timestamp(proposed, "proposed_at") + ttl
    except BadRequest:
        return None
    except OverflowError:  # proposed at the end of time: not a real proposal, expired
        return datetime.min.replace(tzinfo=UTC)


FUTURE_SKEW = timedelta(minutes=5)  # a proposer's clock may run this far ahead of ours


def proposer_violations(
    before: Any, after: Any, pending: Segments, actor: str, now: datetime
) -> list[tuple[str, str, str]]:
    """``(code, message, path)`` for each pending item the write adds or changes that
    does not say who proposed it truly: ``proposed_by`` must be the writer (nobody
    proposes in another's name, which would make or break the self-approval rule), and
    ``proposed_at`` a time that is not in the future (it starts the proposal's TTL)."""
    found = []
    for index, item in fresh(before, after, pending):
        where = (CONTENT, *pending, str(index))
        if not isinstance(item, dict) or item.get("proposed_by") != actor:
            path = pointers.render((*where, "proposed_by"))
            found.append(("PROPOSED_BY_MISMATCH", "proposed_by must be the writer.", path))
            continue
        try:
            stamped = parse_timestamp(item.get("proposed_at"), "proposed_at")
        except BadRequest:
            stamped = None
        if stamped is None or stamped > now + FUTURE_SKEW:
            path = pointers.render((*where, "proposed_at"))
            found.append(("PROPOSED_AT_INVALID", "proposed_at must be a past time.", path))
    return found


def expired_plan(profile: Profile, binding: Binding, content: Any, now: datetime) -> Plan:
    """The compaction job's removal of the binding's pending items whose ``proposed_at``
    plus the profile's ``proposal_rules.ttl_seconds`` has passed (docs/proposals.md):
    they could only be rejected; the job rejects them, reason ``proposal_expired``."""
    ttl = profile.proposals.ttl_seconds
    pending = profile.confidence.pending_sections.get(binding.binding_id)
    if ttl is None or pending is None:
        return Plan()
    items = items_at(content, pending)
    gone = [
        index
        for index, item in enumerate(items)
        if (until := expires_at(item, timedelta(seconds=ttl))) is not None and until <= now
    ]
    plan = Plan(reason_codes=["proposal_expired"] if gone else [])
    for index in reversed(gone):
        path = pointers.render((CONTENT, *pending, str(index)))
        plan.ops.append({"op": "remove", "path": path})
        plan.removed.append(Removed(path, items[index], "proposal_expired", False))
    return plan
