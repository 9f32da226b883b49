"""Entra ID principals and the configuration that makes them callers (spec 16.1;
docs/identity.md "Entra ID bearer tokens").

A :class:`Principal` is what a verified token (or App Service Authentication's client
principal) says about the caller: which client application, which object (the service
principal of an application token, the user of a delegated one), which app roles, and
whether a user signed in (a delegated token carries ``scp``). A :class:`Grant` from the
callers file maps an application (``entra_app_id``) or a service principal
(``entra_object_id``) to mem.net tenants, profiles and services, with a ceiling on roles.
The roles themselves come from the token's app roles (:data:`APP_ROLES`).

Application tokens act for any user of their tenants; delegated tokens only for their
own user (``oid`` becomes :attr:`Caller.user_id`), and only when the grant accepts them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from memnet.domain.callers import Caller
from memnet.domain.errors import ConfigError, Forbidden, Unauthenticated
from memnet.domain.identifiers import SEGMENT

# What a user's own (delegated) token may do, whatever its app roles: the user's own
# memory, never the operators' roles (admin: holds, reindex, any service; debug).
DELEGATED_ROLES = frozenset({"read", "write", "forget", "snapshots"})

# The app roles the API's app registration declares (value -> mem.net role).
APP_ROLES: Mapping[str, str] = {
    "Memory.Read": "read",
    "Memory.Write": "write",
    "Memory.Admin": "admin",
    "Memory.Forget": "forget",
    "Memory.Debug": "debug",
    "Memory.Snapshots": "snapshots",
}


@dataclass(frozen=True)
class Principal:
    app_id: str | None  # azp (v2 tokens) or appid (v1): the client application
    object_id: str | None  # oid: the service principal, or the signed-in user
    roles: frozenset[str]  # app role values as the token carries them
    delegated: bool  # a user's token (it carries scp)


def principal_from_claims(claims: Mapping[str, Any]) -> Principal:
    """The principal of verified claims. Malformed claims are not trusted: a role that
    is not a string is ignored, and ids that are not strings are absent.

    A user's token carries ``scp`` (or ``idtyp: user``); an application token carries
    neither, and is recognised positively (``idtyp: app``, or ``sub`` equal to ``oid``,
    which holds only for a service principal): a token that is neither is refused rather
    than given an application's reach over every user."""
    roles = claims.get("roles")
    role_list = roles if isinstance(roles, list) else []
    object_id = _text(claims.get("oid"))
    kind = claims.get("idtyp")
    delegated = "scp" in claims or kind == "user"
    if not delegated and kind != "app" and (object_id is None or claims.get("sub") != object_id):
        raise Unauthenticated("The token is neither an application's nor a signed-in user's.")
    return Principal(
        app_id=_text(claims.get("azp")) or _text(claims.get("appid")),
        object_id=object_id,
        roles=frozenset(r for r in role_list if isinstance(r, str)),
        delegated=delegated,
    )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


@dataclass(frozen=True)
class Grant:
    """One Entra entry of the callers file."""

    caller_id: str
    app_id: str | None
    object_id: str | None
    tenants: frozenset[str]
    profiles: frozenset[str]
    roles: frozenset[str]  # the most this principal may get, whatever its token says
    services: frozenset[str]
    delegated: bool  # accept users' tokens issued to this application
    clearance: str | None = None  # a sensitivity class (docs/profiles.md)


class PrincipalMap:
    """Grants by application id and by object id."""

    def __init__(self, grants: Iterable[Grant]) -> None:
        grants = list(grants)
        self._by_app = {g.app_id: g for g in grants if g.app_id}
        self._by_object = {g.object_id: g for g in grants if g.object_id}

    def __len__(self) -> int:
        return len(self._by_app) + len(self._by_object)

    def caller(self, principal: Principal) -> Caller:
        """The caller ``principal`` is, or 401/403 in the error shape."""
        grant, user_id = self._grant(principal)
        roles = frozenset(APP_ROLES[r] for r in principal.roles if r in APP_ROLES) & grant.roles
        if user_id is not None:
            roles &= DELEGATED_ROLES
        if not roles:
            raise Forbidden(
                "The token carries no mem.net app role this caller may hold.",
                code="ROLE_FORBIDDEN",
                app_roles=sorted(APP_ROLES),
            )
        return Caller(
            grant.caller_id,
            grant.tenants,
            grant.profiles,
            roles,
            grant.services,
            user_id,
            grant.clearance,
        )

    def _grant(self, principal: Principal) -> tuple[Grant, str | None]:
        if principal.delegated:
            grant = self._by_app.get(principal.app_id or "")
            if grant is None or not grant.delegated:
                raise Forbidden(
                    "This application may not call mem.net for a signed-in user.",
                    code="CALLER_NOT_REGISTERED",
                )
            user_id = principal.object_id
            if user_id is None or not SEGMENT.fullmatch(user_id):
                raise Unauthenticated("The user's token names no usable object id (oid).")
            return grant, user_id
        grant = self._by_object.get(principal.object_id or "") or self._by_app.get(
            principal.app_id or ""
        )
        if grant is None:
            raise Forbidden(
                "This application is not registered as a mem.net caller.",
                code="CALLER_NOT_REGISTERED",
            )
        return grant, None


def grant_from_entry(entry: Mapping[str, Any], where: str, source: str) -> Grant:
    """A :class:`Grant` from a callers-file entry with ``entra_app_id`` or
    ``entra_object_id`` (the caller fields are checked by the callers-file loader)."""
    app_id, object_id = entry.get("entra_app_id"), entry.get("entra_object_id")
    if (app_id is None) == (object_id is None):
        raise ConfigError(source, where, "needs exactly one of entra_app_id, entra_object_id")
    for name, value in (("entra_app_id", app_id), ("entra_object_id", object_id)):
        if value is not None and (not isinstance(value, str) or not SEGMENT.fullmatch(value)):
            raise ConfigError(source, f"{where}/{name}", "must be an id (a GUID)")
    delegated = entry.get("delegated", False)
    if not isinstance(delegated, bool) or (delegated and app_id is None):
        raise ConfigError(
            source, f"{where}/delegated", "must be true or false, and true only with entra_app_id"
        )
    roles = frozenset(entry["roles"])
    return Grant(
        entry["caller_id"],
        app_id,
        object_id,
        frozenset(entry["tenants"]),
        frozenset(entry["profiles"]),
        roles,
        frozenset(entry.get("services", [])),
        delegated,
        entry.get("clearance") if isinstance(entry.get("clearance"), str) else None,
    )
