"""What a caller is granted (issue 28; the web console asks first): who it is,
``GET /v1/me``, and what a profile holds, ``GET /v1/profiles/{profile_id}``.

Both are about no user's data, so a user's own (delegated) token may call them too
(:func:`memnet.api.access.caller_of`, ``userless``). ``/v1/me`` answers the caller's
own grant and nothing about another caller; it is not metered, as it touches nothing.
A profile and its schemas are configuration, never user data, and hold no secret
(``memnet/domain/profile.schema.json`` admits no member that could): a caller that may
use the profile, with a role that reads, gets them as configured. Which ids answer 404
and which 403 is as for a document (docs/decisions.md, "Console (issue 28): the public
routes it needs")."""

from __future__ import annotations

from typing import Any

from memnet.api import parsing
from memnet.api.endpoint import RequestContext, endpoint
from memnet.api.http import ApiRequest, ApiResponse
from memnet.domain.errors import Forbidden
from memnet.domain.profiles import Profile
from memnet.services.profiles.registry import ProfileRegistry

PROFILE_ROLES = frozenset({"read", "review", "admin"})


@endpoint(metered=False, userless=True)
def get_me(request: ApiRequest, ctx: RequestContext) -> ApiResponse:
    """The caller's own grant; ``profiles`` resolved against the loaded profiles (``*``:
    every one of them; a named profile that is not loaded is left out)."""
    caller = ctx.caller
    return ApiResponse.json(
        200,
        {
            "caller_id": caller.caller_id,
            "roles": sorted(caller.roles),
            "tenants": sorted(caller.tenants),
            "profiles": caller.usable_profiles(ctx.services.registry.profile_ids()),
            "user_id": caller.user_id,
            "clearance": caller.clearance,
        },
    )


@endpoint(userless=True)
def get_profile(request: ApiRequest, ctx: RequestContext) -> ApiResponse:
    """The profile as configured and the schemas its bindings name. Checked as a document
    read checks: the id's shape (400), the role (403), then the profile itself
    (:meth:`ProfileRegistry.for_caller`: 403 for one the caller may not use, known or
    not; 404 for an unknown one it could use)."""
    profile_id = parsing.path_id(request, "profile_id")
    if not ctx.caller.roles & PROFILE_ROLES:
        raise Forbidden(
            "Reading a profile needs the read, review or admin role.", code="ROLE_FORBIDDEN"
        )
    registry = ctx.services.registry
    profile = registry.for_caller(ctx.caller, profile_id)
    return ApiResponse.json(
        200,
        {
            "profile_id": profile.profile_id,
            "profile": profile.raw,
            "schemas": _schemas(registry, profile),
        },
    )


def _schemas(registry: ProfileRegistry, profile: Profile) -> dict[str, dict[str, Any]]:
    """``{schema_id: {version: JSON Schema}}`` of exactly the schemas the bindings name."""
    loaded = registry.schemas()
    found: dict[str, dict[str, Any]] = {}
    for binding in profile.bindings:
        key = (binding.schema_id, binding.schema_version)
        found.setdefault(key[0], {})[key[1]] = loaded[key]
    return found
