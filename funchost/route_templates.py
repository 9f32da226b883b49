"""ASP.NET-style route templates: matching, precedence, 404/405, error bodies."""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path
from urllib.parse import unquote

from funchost.index import HttpRoute

DEFAULT_ROUTE_PREFIX = "api"
_ENCODED_SLASH = re.compile("(%2F)", re.IGNORECASE)  # captured: kept as sent


class SegmentKind(IntEnum):
    """Ordered by precedence: a lower value wins when several routes match."""

    LITERAL = 0
    PARAMETER = 1
    CATCH_ALL = 2


@dataclass(frozen=True)
class Segment:
    kind: SegmentKind
    value: str  # the literal text, or the parameter name


@dataclass(frozen=True)
class Resolution:
    """Outcome of routing one request: a match, a 405 (allowed non-empty) or a 404."""

    route: HttpRoute | None = None
    params: dict[str, str] = field(default_factory=dict)
    allowed: tuple[str, ...] = ()

    @property
    def status(self) -> int:
        if self.route is not None:
            return 200
        return 405 if self.allowed else 404


def read_route_prefix(host_json: str | Path = "host.json") -> str:
    """`extensions.http.routePrefix` from host.json; "api" when absent."""
    path = Path(host_json)
    if not path.is_file():
        return DEFAULT_ROUTE_PREFIX
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ValueError(f"{path}: malformed JSON: {exc}") from exc
    prefix = config.get("extensions", {}).get("http", {}).get("routePrefix", DEFAULT_ROUTE_PREFIX)
    return str(prefix).strip("/")


def parse_template(template: str) -> tuple[Segment, ...]:
    """Split a route template (no leading slash) into typed segments."""
    stripped = template.strip("/")
    segments = tuple(_parse_segment(p) for p in stripped.split("/")) if stripped else ()
    for segment in segments[:-1]:
        if segment.kind is SegmentKind.CATCH_ALL:
            raise ValueError(f"catch-all must be the last segment: {template!r}")
    return segments


def _parse_segment(part: str) -> Segment:
    if part.startswith("{") and part.endswith("}"):
        inner = part[1:-1]
        if inner.startswith("*"):
            return Segment(SegmentKind.CATCH_ALL, inner.lstrip("*"))
        return Segment(SegmentKind.PARAMETER, inner.split(":", 1)[0].rstrip("?"))
    if "{" in part or "}" in part:
        raise ValueError(f"unsupported route segment: {part!r}")
    return Segment(SegmentKind.LITERAL, part)


def decode(text: str) -> str:
    """Percent-decoded as Kestrel decodes a request path before ASP.NET Core routes it:
    every escape once, except ``%2F``, which stays as sent (a decoded slash would move a
    segment boundary; routing never decodes it either). ``a%2Fb`` is therefore the one
    segment ``a%2Fb``, not ``a/b``, on both hosts."""
    pieces = _ENCODED_SLASH.split(text)  # text, slash, text, ...
    return "".join(p if i % 2 else unquote(p) for i, p in enumerate(pieces))


def split_path(path: str) -> list[str]:
    """Raw (still percent-encoded) segments of a request path, query removed."""
    path = path.split("?", 1)[0].strip("/")
    return path.split("/") if path else []


@dataclass(frozen=True)
class _Compiled:
    """A route with its template pre-split for :meth:`match`: literals compare
    case-insensitively (percent-decoded once, as :func:`decode` does), a parameter takes
    one non-empty segment,
    a catch-all the rest, which may be empty (ASP.NET Core: "catch-all parameters can
    also match the empty string", so ``docs/{ns}/{*path}`` takes ``docs/a/`` and
    ``docs/a``, a trailing slash being insignificant); values are decoded once."""

    route: HttpRoute
    segments: tuple[Segment, ...]
    literals: tuple[tuple[int, str], ...] = ()  # (index, casefolded text)
    params: tuple[tuple[int, str], ...] = ()  # (index, name)
    catch_all: str | None = None  # the last segment's name, if it is a catch-all

    @classmethod
    def of(cls, route: HttpRoute, segments: tuple[Segment, ...]) -> _Compiled:
        kinds = [(i, s) for i, s in enumerate(segments)]
        last = segments[-1] if segments else None
        return cls(
            route,
            segments,
            tuple((i, s.value.casefold()) for i, s in kinds if s.kind is SegmentKind.LITERAL),
            tuple((i, s.value) for i, s in kinds if s.kind is SegmentKind.PARAMETER),
            last.value if last is not None and last.kind is SegmentKind.CATCH_ALL else None,
        )

    @property
    def rank(self) -> tuple[int, ...]:
        return tuple(int(s.kind) for s in self.segments)

    def match(self, parts: Sequence[str]) -> dict[str, str] | None:
        size = len(self.segments)
        if len(parts) < size - 1 if self.catch_all is not None else len(parts) != size:
            return None
        for i, text in self.literals:
            part = parts[i]
            if (decode(part) if "%" in part else part).casefold() != text:
                return None
        params: dict[str, str] = {}
        for i, name in self.params:
            if not parts[i]:
                return None
            params[name] = decode(parts[i])
        if self.catch_all is not None:
            params[self.catch_all] = decode("/".join(parts[size - 1 :]))
        return params


class Router:
    """Resolves (method, path) against an app's HTTP routes."""

    def __init__(self, routes: Sequence[HttpRoute], prefix: str = DEFAULT_ROUTE_PREFIX) -> None:
        prefix = prefix.strip("/")
        compiled = [
            _Compiled.of(r, parse_template(f"{prefix}/{r.route}" if prefix else r.route))
            for r in routes
        ]
        self._routes = sorted(compiled, key=lambda c: c.rank)  # best match first

    def resolve(self, method: str, path: str) -> Resolution:
        parts, method = split_path(path), method.upper()
        for compiled in self._routes:  # sorted by rank: the first fitting match wins
            if method in compiled.route.methods:
                params = compiled.match(parts)
                if params is not None:
                    return Resolution(compiled.route, params)
        matching = [c for c in self._routes if c.match(parts) is not None]
        return Resolution(allowed=tuple(sorted({m for c in matching for m in c.route.methods})))


def new_request_id() -> str:
    """The app's format (memnet.api.endpoint), so the host's own refusals match the
    OpenAPI document's ``x-request-id`` pattern."""
    return f"req_{secrets.token_hex(12)}"


def error_body(
    code: str, message: str, request_id: str, details: dict[str, object] | None = None
) -> bytes:
    """The project's one error shape, serialised."""
    error = {"code": code, "message": message, "request_id": request_id, "details": details or {}}
    return json.dumps({"error": error}).encode("utf-8")


def not_routed_body(resolution: Resolution, method: str, path: str, request_id: str) -> bytes:
    """JSON body for a 404 (no route) or 405 (route exists, method does not)."""
    if resolution.status == 405:
        message = f"method {method} is not allowed for {path}"
        return error_body("METHOD_NOT_ALLOWED", message, request_id)
    return error_body("ROUTE_NOT_FOUND", f"no route matches {path}", request_id)
