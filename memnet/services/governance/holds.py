"""Legal holds (spec 17, open decision 3): what retention sweeps and forget must keep.

A tenant's holds live in ``tenants/{t}/_policy.json`` (docs/architecture.md),
outside every user's prefix: one hold for the whole tenant and one per user. A hold
keeps the data kinds it names (all of :data:`HOLD_KINDS` unless it says fewer); sweeps
and forget skip held kinds and say so. Setting and clearing a hold is read-modify-write
under the policy blob's ETag, and each is recorded in the tenant's governance log.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memnet.domain.errors import NotFound
from memnet.domain.layout import governance_log_name, tenant_policy_name
from memnet.domain.timestamps import format_millis
from memnet.ports import BlobStore, Clock
from memnet.services.records import JsonRecords

# The kinds of a user's data a hold can keep. Index entries follow their events;
# idempotency records are operational copies and are never held.
HOLD_KINDS = ("documents", "snapshots", "events", "audit", "replays")


@dataclass(frozen=True)
class Held:
    """Why one kind of one user's data is kept: the hold and its scope."""

    kind: str
    scope: str  # "tenant" or "user"
    hold: dict[str, Any]

    def as_json(self) -> dict[str, Any]:
        """What a receipt or a sweep report says was kept: ``reason`` is always
        ``legal_hold``; the hold's own reason is ``hold_reason``."""
        return {
            "reason": "legal_hold",
            "scope": self.scope,
            "hold_id": self.hold.get("hold_id"),
            "hold_reason": self.hold.get("reason"),
            "set_by": self.hold.get("set_by"),
            "set_at": self.hold.get("set_at"),
        }


class LegalHolds:
    def __init__(self, blobs: BlobStore, clock: Clock) -> None:
        self._clock, self._records = clock, JsonRecords(blobs)

    def policy(self, tenant_id: str) -> dict[str, Any]:
        """The tenant's holds: ``{"tenant": hold or None, "users": {user_id: hold}}``."""
        found = self._records.read(tenant_policy_name(tenant_id))
        return _policy(None if found is None else found.value)

    def held(self, tenant_id: str, user_id: str) -> dict[str, Held]:
        """Each held kind of the user's data, with the hold that keeps it (the tenant's
        hold wins when both name a kind)."""
        return held_kinds(self.policy(tenant_id), user_id)

    def set(
        self, tenant_id: str, user_id: str | None, hold: dict[str, Any], actor: str
    ) -> dict[str, Any]:
        """Set (or replace) the tenant's hold (``user_id`` None) or one user's; returns
        the stored hold. ``hold`` carries ``reason`` and optionally ``kinds``."""
        stored = {
            "hold_id": f"hold_{secrets.token_hex(8)}",
            "reason": hold["reason"],
            "kinds": list(hold.get("kinds") or HOLD_KINDS),
            "set_by": actor,
            "set_at": format_millis(self._clock.now()),
        }

        def change(policy: dict[str, Any]) -> None:
            if user_id is None:
                policy["tenant"] = stored
            else:
                policy["users"][user_id] = stored

        self._update(tenant_id, change)
        self.log(tenant_id, "hold_set", actor, user_id=user_id, hold=stored)
        return stored

    def clear(self, tenant_id: str, user_id: str | None, actor: str) -> dict[str, Any]:
        """Clear a hold; 404 ``HOLD_NOT_FOUND`` when there is none. Returns the hold."""
        cleared: dict[str, Any] = {}

        def change(policy: dict[str, Any]) -> None:
            current = policy["tenant"] if user_id is None else policy["users"].get(user_id)
            if current is None:
                raise NotFound("No legal hold is set here.", code="HOLD_NOT_FOUND")
            cleared.update(current)
            if user_id is None:
                policy["tenant"] = None
            else:
                del policy["users"][user_id]

        self._update(tenant_id, change)
        self.log(tenant_id, "hold_cleared", actor, user_id=user_id, hold=cleared)
        return cleared

    def log(self, tenant_id: str, action: str, actor: str, **details: Any) -> str:
        """Append one entry to the tenant's governance log (create-only, time-sortable
        id); return its id."""
        now = self._clock.now()
        entry_id = f"gov_{int(now.timestamp() * 1000):012x}{secrets.token_hex(8)}"
        entry = {
            "entry_id": entry_id,
            "action": action,
            "actor": actor,
            "tenant_id": tenant_id,
            "timestamp": format_millis(now),
            **details,
        }
        self._records.save(governance_log_name(tenant_id, entry_id), entry, None)
        return entry_id

    def _update(self, tenant_id: str, change: Callable[[dict[str, Any]], None]) -> None:
        def changed(found: dict[str, Any] | None) -> dict[str, Any]:
            policy = _policy(found)
            change(policy)
            return policy

        self._records.update(tenant_policy_name(tenant_id), changed)


def _policy(found: dict[str, Any] | None) -> dict[str, Any]:
    found = found or {}
    return {"tenant": found.get("tenant"), "users": dict(found.get("users", {}))}


def held_kinds(policy: dict[str, Any], user_id: str) -> dict[str, Held]:
    """The kinds ``policy`` holds for ``user_id``. A held document keeps its history: a
    hold on ``documents`` holds ``audit`` too (without its audit records a kept
    document's history, rebase and idempotent settle would rest on a broken chain)."""
    found: dict[str, Held] = {}
    for scope, hold in (("user", policy["users"].get(user_id)), ("tenant", policy["tenant"])):
        kinds = list((hold or {}).get("kinds", ()))
        for kind in kinds + (["audit"] if "documents" in kinds else []):
            found[kind] = Held(kind, scope, hold or {})
    return found
