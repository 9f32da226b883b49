"""The proposal queue's pure parts (issue 15, capability 4; docs/proposals.md): the
entries of one document's pending section, finding a proposal by id, whether it may be
approved, and where its candidate is written. :mod:`memnet.services.proposal_review`
does the reads and the write."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from memnet.domain import pointers
from memnet.domain.callers import Caller
from memnet.domain.document_model import StoredDocument
from memnet.domain.envelope import CONTENT
from memnet.domain.errors import Conflict, Forbidden, Unprocessable
from memnet.domain.layout import DocumentRef
from memnet.domain.profiles import Binding, Profile
from memnet.domain.proposals import expires_at, items_at, proposal_id, target_of
from memnet.domain.timestamps import format_millis


def queue_items(
    profile: Profile, binding: Binding, ref: DocumentRef, stored: StoredDocument, now: datetime
) -> list[dict[str, Any]]:
    pending = profile.confidence.pending_sections[binding.binding_id]
    content = stored.document.get("content")
    found = []
    for index, item in enumerate(items_at(content, pending)):
        if not isinstance(item, dict):
            continue
        expires = expires_at(item, ttl_of(profile))
        found.append(
            {
                "proposal_id": proposal_id(ref.namespace, ref.path, item),
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


def find_items(
    profile: Profile, binding: Binding, ref: DocumentRef, stored: StoredDocument, wanted: str
) -> tuple[list[int], dict[str, Any]] | None:
    """The indexes of the proposal's item (identical items are one proposal: a decision
    removes them all, so it is applied once) and the item; None if absent."""
    pending = profile.confidence.pending_sections[binding.binding_id]
    items = items_at(stored.document.get("content"), pending)
    found = [
        index
        for index, item in enumerate(items)
        if isinstance(item, dict) and proposal_id(ref.namespace, ref.path, item) == wanted
    ]
    return (found, items[found[0]]) if found else None


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
    """The op (``add`` or ``replace``) and document path the candidate is written with;
    422 ``PROPOSAL_INVALID`` for a proposal with another op, or whose target is in or
    above its own pending section."""
    op, target = item.get("op", "add"), target_of(item)
    inside = target is not None and (
        pointers.is_within(target, pending) or pointers.is_within(pending, target)
    )
    if op not in ("add", "replace") or not target or inside:
        raise Unprocessable(
            "The proposal's op and target_path are not a write it can make.",
            code="PROPOSAL_INVALID",
        )
    return op, pointers.render((CONTENT, *target))


def ttl_of(profile: Profile) -> timedelta | None:
    seconds = profile.proposals.ttl_seconds
    return None if seconds is None else timedelta(seconds=seconds)
