"""Callers: who is asking, and what they may touch (spec 16.1; docs/identity.md).

An :class:`~memnet.ports.Authenticator` turns request headers into a :class:`Caller`
(401 otherwise); the caller is then checked against tenant, profile and role on every
call (403), and an event writer against the service it records the event for
(``services``).
"""

from __future__ import annotations

from dataclasses import dataclass

from memnet.domain.errors import Forbidden

FULL_CLEARANCE = "*"  # the service's own jobs: they see and keep everything
ROLES = frozenset({"read", "write", "admin", "debug", "forget", "snapshots", "review"})
ANY = "*"


@dataclass(frozen=True)
class Caller:
    caller_id: str
    tenants: frozenset[str]
    profiles: frozenset[str]
    roles: frozenset[str]
    services: frozenset[str] = frozenset()  # besides its own caller_id; ANY: every service
    user_id: str | None = None  # a delegated (user's own) token: bound to this one user
    clearance: str | None = None  # a sensitivity class (FULL_CLEARANCE: every class)

    def acting_clearance(self) -> str | None:
        """The clearance this caller's acts carry when the service acts for it under
        other roles (a replay of its upload, the write of its review): its own; every
        class for an admin that names none, as an admin's own reads have."""
        if self.clearance is None and "admin" in self.roles:
            return FULL_CLEARANCE
        return self.clearance

    def require_user(self, user_id: str | None) -> None:
        """Raise 403 unless this caller may act for ``user_id`` (None: a route about no
        one user, such as a tenant's holds, which a user-bound caller may not use)."""
        if self.user_id is not None and user_id != self.user_id:
            raise Forbidden(
                "A user's own token reaches only that user's memory.", code="USER_FORBIDDEN"
            )

    def bound_to(self, tenant_id: str) -> bool:
        return ANY in self.tenants or tenant_id in self.tenants

    def require(self, tenant_id: str, role: str) -> None:
        """Raise 403 unless this caller holds ``role`` in ``tenant_id``."""
        if not self.bound_to(tenant_id):
            raise Forbidden("Caller is not bound to this tenant.", code="TENANT_FORBIDDEN")
        if role not in self.roles:
            raise Forbidden(f"Caller lacks the {role!r} role.", code="ROLE_FORBIDDEN", role=role)

    def require_service(self, service_id: str) -> None:
        """Raise 403 unless this caller may record events as ``service_id``: its own id,
        one in its ``services`` (``"*"``: any), or any at all for an admin."""
        if service_id == self.caller_id or "admin" in self.roles:
            return
        if ANY not in self.services and service_id not in self.services:
            raise Forbidden(
                "Caller may not act as this service.",
                code="SERVICE_FORBIDDEN",
                service_id=service_id,
            )

    def may_read(self) -> bool:
        """Whether this caller holds the ``read`` role (in the tenants it is bound to)."""
        return "read" in self.roles

    def require_profile(self, profile_id: str) -> None:
        if ANY not in self.profiles and profile_id not in self.profiles:
            raise Forbidden(
                "Caller may not use this profile.", code="PROFILE_FORBIDDEN", profile_id=profile_id
            )

    def usable_profiles(self, known: list[str]) -> list[str]:
        """The profiles among ``known`` this caller may use, in ``known``'s order."""
        return [p for p in known if ANY in self.profiles or p in self.profiles]

    def default_profile(self, known: list[str]) -> str | None:
        """The one profile this caller can use among ``known``, if there is exactly one."""
        usable = self.usable_profiles(known)
        return usable[0] if len(usable) == 1 else None
