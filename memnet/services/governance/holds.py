"""Legal holds (spec 17, open decision 3): what retention sweeps and forget must keep.

A tenant's holds live in ``tenants/{t}/_policy.json`` (docs/architecture.md),
outside every user's prefix: one hold for the whole tenant and one per user. A hold
keeps the data kinds it names (all of :data:`HOLD_KINDS` unless it says fewer); sweeps
and forget skip held kinds and say so. Setting and clearing a hold is read-modify-write
under the policy blob's ETag, and each is recorded in the tenant's governance log.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from memnet.domain.envelope import Json
from memnet.domain.errors import NotFound
from memnet.domain.layout import governance_log_name, tenant_policy_name
from memnet.domain.timestamps import format_millis
from memnet.ports import BlobStore, Clock
from memnet.services.records import JsonRecords

# The kinds of a user's data a hold can keep. Index entries follow their events;
# idempotency records are operational copies and are never held.
HOLD_KINDS = ("documents", "snapshots", "events", "audit", "replays")


@dataclass(frozen=True)
class Hold:
    """One legal hold: what it keeps, why, and who set it when."""

    hold_id: str
    reason: str
    kinds: tuple[str, ...]
    set_by: str
    set_at: str

    @classmethod
    def from_json(cls, stored: Json) -> Hold:
        return cls(
            stored["hold_id"],
            stored["reason"],
            tuple(stored.get("kinds") or HOLD_KINDS),
            stored["set_by"],
            stored["set_at"],
        )

    def as_json(self) -> Json:
        return {**asdict(self), "kinds": list(self.kinds)}


@dataclass(frozen=True)
class HoldPolicy:
    """A tenant's holds: one for the whole tenant and one per user."""

    tenant: Hold | None = None
    users: Mapping[str, Hold] = field(default_factory=dict)

    @classmethod
    def from_json(cls, stored: Json | None) -> HoldPolicy:
        stored = stored or {}
        tenant = stored.get("tenant")
        users = {u: Hold.from_json(h) for u, h in (stored.get("users") or {}).items()}
        return cls(None if tenant is None else Hold.from_json(tenant), users)

    def as_json(self) -> Json:
        users = {u: h.as_json() for u, h in self.users.items()}
        return {"tenant": None if self.tenant is None else self.tenant.as_json(), "users": users}

    def of(self, user_id: str | None) -> Hold | None:
        """The tenant's hold (``user_id`` None) or one user's."""
        return self.tenant if user_id is None else self.users.get(user_id)

    def with_hold(self, user_id: str | None, hold: Hold | None) -> HoldPolicy:
        """This policy with the tenant's or one user's hold set (None: cleared)."""
        if user_id is None:
            return replace(self, tenant=hold)
        users = {u: h for u, h in self.users.items() if u != user_id}
        return replace(self, users=users if hold is None else {**users, user_id: hold})

    def held(self, user_id: str) -> dict[str, Held]:
        """The kinds held for ``user_id``. A held document keeps its history: a hold on
        ``documents`` holds ``audit`` too (without its audit records a kept document's
        history, rebase and idempotent settle would rest on a broken chain). The tenant's
        hold wins when both name a kind."""
        found: dict[str, Held] = {}
        for scope, hold in (("user", self.users.get(user_id)), ("tenant", self.tenant)):
            if hold is None:
                continue
            for kind in (*hold.kinds, *(("audit",) if "documents" in hold.kinds else ())):
                found[kind] = Held(kind, scope, hold)
        return found


@dataclass(frozen=True)
class Held:
    """Why one kind of one user's data is kept: the hold and its scope."""

    kind: str
    scope: str  # "tenant" or "user"
    hold: Hold

    def as_json(self) -> Json:
        """What a receipt or a sweep report says was kept: ``reason`` is always
        ``legal_hold``; the hold's own reason is ``hold_reason``."""
        return {
            "reason": "legal_hold",
            "scope": self.scope,
            "hold_id": self.hold.hold_id,
            "hold_reason": self.hold.reason,
            "set_by": self.hold.set_by,
            "set_at": self.hold.set_at,
        }


class LegalHolds:
    def __init__(self, blobs: BlobStore, clock: Clock) -> None:
        self._clock, self._records = clock, JsonRecords(blobs)

    def policy(self, tenant_id: str) -> HoldPolicy:
        """The tenant's holds."""
        found = self._records.read(tenant_policy_name(tenant_id))
        return HoldPolicy.from_json(None if found is None else found.value)

    def held(self, tenant_id: str, user_id: str) -> dict[str, Held]:
        """Each held kind of the user's data, with the hold that keeps it."""
        return self.policy(tenant_id).held(user_id)

    def set(self, tenant_id: str, user_id: str | None, hold: Json, actor: str) -> Hold:
        """Set (or replace) the tenant's hold (``user_id`` None) or one user's; returns
        the stored hold. ``hold`` carries ``reason`` and optionally ``kinds`` (none: every
        kind of :data:`HOLD_KINDS`)."""
        kinds = tuple(hold.get("kinds") or HOLD_KINDS)
        now = format_millis(self._clock.now())
        stored = Hold(f"hold_{secrets.token_hex(8)}", hold["reason"], kinds, actor, now)
        self._update(tenant_id, lambda policy: policy.with_hold(user_id, stored))
        self.log(tenant_id, "hold_set", actor, user_id=user_id, hold=stored.as_json())
        return stored

    def clear(self, tenant_id: str, user_id: str | None, actor: str) -> Hold:
        """Clear a hold; 404 ``HOLD_NOT_FOUND`` when there is none. Returns the hold."""
        cleared: list[Hold] = []

        def change(policy: HoldPolicy) -> HoldPolicy:
            current = policy.of(user_id)
            if current is None:
                raise NotFound("No legal hold is set here.", code="HOLD_NOT_FOUND")
            cleared[:] = [current]
            return policy.with_hold(user_id, None)

        self._update(tenant_id, change)
        self.log(tenant_id, "hold_cleared", actor, user_id=user_id, hold=cleared[0].as_json())
        return cleared[0]

    def restore(self, tenant_id: str, user_id: str, hold: Hold, actor: str) -> bool:
        """Keep an imported user's data held as the source held it (issue 27). The hold
        becomes the user's own: a source tenant's hold is not the target tenant's to
        impose on its other users. A user already held keeps its hold's id and reason
        and holds the kinds of both. Logged as ``hold_restored``; False when the user's
        hold already covered it (nothing written)."""
        merged: list[Hold] = []

        def change(found: Json | None) -> Json | None:
            policy = HoldPolicy.from_json(found)
            current = policy.of(user_id)
            kinds = set(hold.kinds) | set(current.kinds if current else ())
            new = hold if current is None else replace(current, kinds=_ordered(kinds))
            merged[:] = [] if new == current else [new]
            return policy.with_hold(user_id, new).as_json() if merged else None

        self._records.update(tenant_policy_name(tenant_id), change)
        if merged:
            self.log(tenant_id, "hold_restored", actor, user_id=user_id, hold=merged[0].as_json())
        return bool(merged)

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

    def _update(self, tenant_id: str, change: Callable[[HoldPolicy], HoldPolicy]) -> None:
        name = tenant_policy_name(tenant_id)
        self._records.update(name, lambda found: change(HoldPolicy.from_json(found)).as_json())


def _ordered(kinds: set[str]) -> tuple[str, ...]:
    return tuple(k for k in HOLD_KINDS if k in kinds)
