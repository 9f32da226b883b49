"""The proposal queue's pure parts (issue 15, capability 4; docs/proposals.md): the
entries of one document's pending section, finding a proposal by id, whether it may be
approved, and where its candidate is written. :mod:`memnet.services.proposals.review`
does the reads and the write."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from memnet.domain import pointers
from memnet.domain.bindings import Binding
from memnet.domain.callers import Caller
from memnet.domain.document_model import StoredDocument
from memnet.domain.envelope import CONTENT
from memnet.domain.errors import Conflict, Forbidden, Unprocessable
from memnet.domain.layout import DocumentRef
from memnet.domain.profiles import Profile
from memnet.domain.proposals import expires_at, id_of, items_at, target_of
from memnet.domain.timestamps import format_millis


def queue_items(
    profile: Profile, binding: Binding, ref: DocumentRef, stored: StoredDocument, now: datetime
) -> list[dict[str, Any]]:
    pending = profile.confidence.pending_sections[binding.binding_id]
    content = stored.document.get("content")
    found = []
    for index, item in enumerate(items_at(content, pending)):
        identity = id_of(item, ref.namespace, ref.path)
        if identity is None:  # written before ids: the document's next write gives it one
            continue
        expires = expires_at(item, ttl_of(profile))
        found.append(
            {
                "proposal_id": identity,
                "status": "expired" if expires is not None and expires <= now else "pending",
                "namespace": ref.namespace,
                "path": ref.path,
                "binding_id": binding.binding_id,
                "index": index,
                "expires_at": None if expires is None else format_millis(expires),
                "etag": stored.etag,
                "item": item,
            }
        )
    return found


def find_item(
    profile: Profile, binding: Binding, ref: DocumentRef, stored: StoredDocument, wanted: str
) -> tuple[int, dict[str, Any]] | None:
    """The index of the proposal's item and the item; None if absent (ids are unique
    within a document: :func:`memnet.domain.proposals.stamps`)."""
    pending = profile.confidence.pending_sections[binding.binding_id]
    items = items_at(stored.document.get("content"), pending)
    for index, item in enumerate(items):
        if id_of(item, ref.namespace, ref.path) == wanted:
            return index, item
    return None


def check_approvable(caller: Caller, profile: Profile, item: dict[str, Any], now: datetime) -> None:
    if item.get("proposed_by") == caller.caller_id and not profile.proposals.self_approval:
        raise Forbidden(
            "A caller may not approve its own proposal (proposal_rules.self_approval).",
            code="SELF_APPROVAL_FORBIDDEN",
        )
    expires = expires_at(item, ttl_of(profile))
    if expires is not None and expires <= now:
        raise Conflict(
            "The proposal expired; it may only be rejected.",
            code="PROPOSAL_EXPIRED",
            expired_at=format_millis(expires),
        )


def write_target(item: dict[str, Any], pending: tuple[str, ...]) -> tuple[str, str]:
    """The op (``add``, ``replace``, or ``remove`` for a removal the poisoning guard
    held) and document path the candidate is written with; 422 ``PROPOSAL_INVALID`` for
    a proposal with another op, or whose target is in or above its own pending section."""
    op, target = item.get("op", "add"), target_of(item)
    inside = target is not None and (
        pointers.is_within(target, pending) or pointers.is_within(pending, target)
    )
    if op not in ("add", "replace", "remove") or not target or inside:
        raise Unprocessable(
            "The proposal's op and target_path are not a write it can make.",
            code="PROPOSAL_INVALID",
        )
    return op, pointers.render((CONTENT, *target))


def ttl_of(profile: Profile) -> timedelta | None:
    seconds = profile.proposals.ttl_seconds
    return None if seconds is None else timedelta(seconds=seconds)


def target_problem(item: Any, pending: tuple[str, ...], content: Any) -> str | None:
    """Why approving ``item`` could never write its candidate into ``content`` (the
    document as the write that proposes it leaves it), or None: its op and target must be
    a write it can make (:func:`write_target`), the target's parent must exist (an array
    index within it, ``-`` only in an array, ``replace`` only of a value that is there),
    and a value the target names already that is an array or an object is replaced only
    by one of the same kind: an item meant for ``/facts/-`` proposed at ``/facts`` would
    replace the whole list with one item, which neither approve nor edit could store."""
    if not isinstance(item, dict):
        return None
    try:
        op, path = write_target(item, pending)
    except Unprocessable:
        return NOT_A_WRITE
    *parent, last = pointers.parse(path)[1:]
    try:
        holder = pointers.resolve(content, tuple(parent))
    except KeyError:
        return NO_PLACE
    if isinstance(holder, list):
        return _in_array(op, last, holder, item.get("candidate"))
    if isinstance(holder, dict):
        if last in holder:
            return None if op == "remove" else _same_kind(holder[last], item.get("candidate"))
        return NO_PLACE if op in ("replace", "remove") else None
    return NO_PLACE


NOT_A_WRITE = (
    "a proposal's op must be add, replace or remove, its target outside its pending section."
)
NO_PLACE = "a proposal's target_path must name a place in the document its op can write."
OTHER_KIND = (
    "a proposal's target_path names a list or an object its candidate, of another kind, "
    "would replace whole; append to a list with /-."
)


def _in_array(op: str, last: str, holder: list[Any], candidate: Any) -> str | None:
    if last == "-":
        return None if op == "add" else NO_PLACE
    if not pointers.is_digits(last) or last != str(int(last)):
        return NO_PLACE
    position = int(last)
    if op == "add":
        return None if position <= len(holder) else NO_PLACE
    if op == "remove":
        return None if position < len(holder) else NO_PLACE
    return _same_kind(holder[position], candidate) if position < len(holder) else NO_PLACE


def _same_kind(current: Any, candidate: Any) -> str | None:
    for kind in (list, dict):
        if isinstance(current, kind) and not isinstance(candidate, kind):
            return OTHER_KIND
    return None


def removal_problem(item: dict[str, Any], content: Any) -> str | None:
    """Why a ``remove`` proposal can no longer be approved, or None: the value at its
    target must still be the one it proposed to remove (an earlier removal or insert
    moves array items, and approval must not remove another)."""
    target = target_of(item)
    try:
        current = pointers.resolve(content, target or ())
    except KeyError:
        return "the item the proposal would remove is gone"
    if "candidate" in item and item["candidate"] is not None and current != item["candidate"]:
        return "the item at the proposal's target_path is no longer the one it would remove"
    return None
