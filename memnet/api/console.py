"""The console's files (issue 28; docs/console.md): ``GET /console/`` answers the page,
``GET /console/a/<version>/<file>`` its scripts and styles.

The console is static files in the repository's ``console/`` folder, served as they are
(no build). Its assets are addressed by a version, the SHA-256 of every file in the
folder, so they can be cached for a year (``immutable``) while the page itself is never
cached: a deployment changes the version, the page names the new one, and a browser never
mixes old and new modules. A request for another version is 404, never today's bytes
under yesterday's name.

Every answer carries a strict Content Security Policy: scripts and styles from this
origin only, no inline script, no ``eval``, no framing, nothing loaded from elsewhere
(``connect-src`` adds the Entra ID sign-in endpoint when the app signs in with Entra),
and Trusted Types required, so no string can ever become markup: the console builds its
pages with DOM calls and text nodes (memory is untrusted text; docs/console.md
"Untrusted content").

Public: the files hold no data; everything the console shows comes from the public API,
called with the signed-in person's credentials.

The same module answers the two public routes the console reads first:

What a client (the web console first; issue 28) asks before it shows anything: who it
is, ``GET /v1/me``, and what a profile holds, ``GET /v1/profiles/{profile_id}``.

Both are about no user's data, so a user's own (delegated) token may call them too
(:func:`memnet.api.access.caller_of`, ``userless``). ``/v1/me`` answers the caller's
own grant and nothing about another caller; it is not metered, as it touches nothing.
A profile and its schemas are configuration, never user data, and hold no secret
(``memnet/domain/profile.schema.json`` admits no member that could): a caller that may
use the profile, with a role that reads, gets them as configured. Which ids answer 404
and which 403 is as for a document (docs/decisions.md, "Console (issue 28): the public
routes it needs")."""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memnet.api import parsing
from memnet.api.endpoint import RequestContext, ServicesSource, endpoint, public
from memnet.api.http import ApiRequest, ApiResponse
from memnet.domain.errors import Forbidden
from memnet.domain.profiles import Profile
from memnet.services.profiles.registry import ProfileRegistry

FOLDER = Path(__file__).resolve().parents[2] / "console"
PAGE = "index.html"
ASSETS = "a"  # /console/a/<version>/<file>
VERSION_MARK = "%VERSION%"
TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".json": "application/json; charset=utf-8",
    ".html": "text/html; charset=utf-8",
}
POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'{connect}; frame-src{frames}; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'; require-trusted-types-for 'script'; trusted-types 'none'"
)
IMMUTABLE = "public, max-age=31536000, immutable"


@dataclass(frozen=True)
class Files:
    """The console folder as read once per process: each file's bytes, and the version."""

    files: dict[str, bytes]
    version: str


@functools.cache
def files() -> Files:
    found = {
        path.relative_to(FOLDER).as_posix(): path.read_bytes()
        for path in sorted(FOLDER.rglob("*"))
        if path.is_file() and path.suffix in TYPES
    }
    digest = hashlib.sha256()
    for name, data in found.items():
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)
    return Files(found, digest.hexdigest()[:16])


def headers(content_type: str, cache: str, sign_in_origin: str | None = None) -> dict[str, str]:
    extra = f" {sign_in_origin}" if sign_in_origin else ""
    policy = POLICY.format(connect=extra, frames=extra or " 'none'")
    return {
        "Content-Type": content_type,
        "Cache-Control": cache,
        "Content-Security-Policy": policy,
        "X-Frame-Options": "DENY",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cross-Origin-Opener-Policy": "same-origin",
        "Cross-Origin-Resource-Policy": "same-origin",
        "Permissions-Policy": "camera=(), microphone=(), geolocation=(), payment=()",
    }


def _not_found() -> ApiResponse:
    return ApiResponse(404, b"Not found.\n", headers("text/plain; charset=utf-8", "no-store"))


@public
def get_console(request: ApiRequest, services: ServicesSource) -> ApiResponse:
    """The page for ``/console/`` (and ``/console/index.html``); an asset for
    ``/console/a/<version>/<file>``; 404 for anything else."""
    served = files()
    path = request.route_params.get("path", "")
    if path in ("", PAGE):
        page = served.files[PAGE].replace(VERSION_MARK.encode(), served.version.encode())
        return ApiResponse(200, page, headers(TYPES[".html"], "no-cache"))
    prefix = f"{ASSETS}/{served.version}/"
    name = path[len(prefix) :] if path.startswith(prefix) else None
    if name is None or name == PAGE or name not in served.files:
        return _not_found()
    return ApiResponse(200, served.files[name], headers(TYPES[Path(name).suffix], IMMUTABLE))


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
