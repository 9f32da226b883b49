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

When the app offers Entra ID sign-in (``MEMNET_CONSOLE_CLIENT_ID``), the page carries
what MSAL needs in ``<meta name="memnet-entra" content="<JSON>">`` (the console's client
id, the authority, the API's scope; empty otherwise): no route of its own, and nothing
secret.

Public: the files hold no data; everything the console shows comes from the public API,
called with the signed-in person's credentials."""

from __future__ import annotations

import functools
import hashlib
import html
import json
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from memnet.api.endpoint import ServicesSource, public
from memnet.api.http import ApiRequest, ApiResponse
from memnet.domain.errors import MemnetError
from memnet.settings import Settings

FOLDER = Path(__file__).resolve().parents[2] / "console"
PAGE = "index.html"
ASSETS = "a"  # /console/a/<version>/<file>
VERSION_MARK = "%VERSION%"
ENTRA_MARK = "%ENTRA%"  # the content of <meta name="memnet-entra">
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
    "connect-src 'self'{connect}; frame-src 'none'; base-uri 'none'; form-action 'none'; "
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
    policy = POLICY.format(connect=extra)
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


def entra_sign_in(services: ServicesSource) -> dict[str, str] | None:
    """What the page needs to sign people in with Entra ID (MSAL): the console's client
    id, the authority and the API's scope; None when the app does not offer it, or
    cannot start (the page still signs in with an API key, and says what the API answers)."""
    try:
        settings = services().settings
    except MemnetError:
        return None
    return sign_in_config(settings)


def sign_in_config(settings: Settings) -> dict[str, str] | None:
    """Set when the API takes Entra tokens and the console has its own registration."""
    client_id = settings.console_client_id
    if not client_id or "entra" not in settings.auth_modes:
        return None
    return {
        "clientId": client_id,
        "authority": settings.console_authority,
        "scope": settings.console_api_scope,
    }


def _page(served: Files, sign_in: dict[str, str] | None) -> ApiResponse:
    """The page, naming this version's assets and carrying the sign-in settings; the
    policy lets it reach the sign-in origin only when it signs in there."""
    meta = html.escape(json.dumps(sign_in), quote=True) if sign_in else ""
    page = served.files[PAGE].replace(VERSION_MARK.encode(), served.version.encode())
    page = page.replace(ENTRA_MARK.encode(), meta.encode())
    origin = _origin(sign_in["authority"]) if sign_in else None
    return ApiResponse(200, page, headers(TYPES[".html"], "no-cache", origin))


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _not_found() -> ApiResponse:
    return ApiResponse(404, b"Not found.\n", headers("text/plain; charset=utf-8", "no-store"))


@public
def get_console(request: ApiRequest, services: ServicesSource) -> ApiResponse:
    """The page for ``/console/`` (and ``/console/index.html``); an asset for
    ``/console/a/<version>/<file>``; 404 for anything else."""
    served = files()
    path = request.route_params.get("path", "")
    if path in ("", PAGE):
        return _page(served, entra_sign_in(services))
    prefix = f"{ASSETS}/{served.version}/"
    name = path[len(prefix) :] if path.startswith(prefix) else None
    if name is None or name == PAGE or name not in served.files:
        return _not_found()
    return ApiResponse(200, served.files[name], headers(TYPES[Path(name).suffix], IMMUTABLE))
