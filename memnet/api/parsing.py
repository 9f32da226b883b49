"""Parsing of request parts into typed values: every malformed input is a 400 here,
before any policy or storage runs (docs/architecture.md, "Parse, then check, then apply")."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

from memnet.api.http import ApiRequest
from memnet.api.models.base import ModelT, validated
from memnet.domain import pointers
from memnet.domain.envelope import canonical
from memnet.domain.errors import (
    BadRequest,
    Forbidden,
    PayloadTooLarge,
    PreconditionRequired,
    UnsupportedMediaType,
)
from memnet.domain.identifiers import check_document_path, check_identifier
from memnet.domain.layout import DocumentRef
from memnet.domain.pointers import depth_exceeds

MAX_DEPTH = 64
_KEY = re.compile(r"[\x21-\x7e]{1,255}")
_JSON_MEDIA = re.compile(r"application/(?:[A-Za-z0-9.!#$&^_-]+\+)?json", re.IGNORECASE)
_ETAG = re.compile(r'(W/)?"[\x21\x23-\x7e]{1,200}"')


def json_body(request: ApiRequest, limit: int) -> dict[str, Any]:
    """The body as a JSON object (strict JSON; its members are the caller's to check)."""
    if len(request.body) > limit:
        raise PayloadTooLarge(f"Body exceeds {limit} bytes.", limit=limit)
    body = _parse(_utf8_json(request))
    if not isinstance(body, dict):
        raise BadRequest("Body must be a JSON object.", code="MALFORMED_JSON")
    return body


def model_body(
    request: ApiRequest, limit: int, model: type[ModelT]
) -> tuple[dict[str, Any], ModelT]:
    """The body as parsed (what an idempotency fingerprint hashes) and as ``model``:
    the byte limit, media type and strict JSON first, which pydantic does not check."""
    body = json_body(request, limit)
    return body, validated(model, body)


def _utf8_json(request: ApiRequest) -> str:
    """The body as text: a non-empty body must be ``application/json`` (or ``+json``) in
    UTF-8 without a byte order mark (RFC 8259 section 8.1), else 415."""
    if not request.body:
        return ""
    media, _, parameters = (request.header("content-type") or "").partition(";")
    charset = _charset(parameters)
    if not _JSON_MEDIA.fullmatch(media.strip()) or charset not in (None, "utf-8", "utf8"):
        raise UnsupportedMediaType(
            "Body must be JSON in UTF-8 (Content-Type: application/json).",
            content_type=(request.header("content-type") or "")[:100],
        )
    try:
        text = request.body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnsupportedMediaType(f"Body is not UTF-8: byte {exc.start}.") from exc
    if text.startswith("\ufeff"):
        raise UnsupportedMediaType("Body starts with a byte order mark; send plain UTF-8.")
    if "\x00" in text:  # never in JSON text; UTF-16/32 without a byte order mark
        raise UnsupportedMediaType("Body holds NUL bytes (UTF-16 or UTF-32?); send UTF-8.")
    return text


def _charset(parameters: str) -> str | None:
    for parameter in parameters.split(";"):
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "charset":
            return value.strip().strip('"').lower()
    return None


def _parse(text: str) -> Any:
    """Strict JSON: no NaN/Infinity, no lone surrogates, no duplicate member names,
    nesting at most MAX_DEPTH."""
    try:
        body = json.loads(
            text or "null",
            parse_constant=_refuse,
            parse_float=_finite,
            object_pairs_hook=_unique_members,
        )
        if "\\ud" in text or "\\uD" in text:  # an escape may have made a lone surrogate,
            json.dumps(body, ensure_ascii=False).encode()  # which cannot be stored
    except (ValueError, UnicodeError, RecursionError) as exc:
        raise BadRequest(f"Body is not valid JSON: {_reason(exc)}", code="MALFORMED_JSON") from exc
    if text.count("[") + text.count("{") > MAX_DEPTH and depth_exceeds(body, MAX_DEPTH):
        raise BadRequest(f"Body nests deeper than {MAX_DEPTH} levels.", code="MALFORMED_JSON")
    return body


def _unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose member names are unique (RFC 8259 "SHOULD"; last-wins parsing
    would let two readers of one body see different values)."""
    found = dict(pairs)
    if len(found) != len(pairs):
        counts = Counter(name for name, _ in pairs)
        name = next(name for name, count in counts.items() if count > 1)
        raise ValueError(f"duplicate member name {name[:50]!r}")
    return found


def _refuse(constant: str) -> float:
    raise ValueError(f"{constant} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number {text[:20]} is out of range")
    return value


def _reason(exc: Exception) -> str:
    if isinstance(exc, RecursionError):
        return "nesting too deep"
    return str(exc).encode("ascii", "backslashreplace").decode()[:200]


def document_ref(request: ApiRequest, path: str) -> DocumentRef:
    try:
        checked = check_document_path(path)
    except BadRequest as error:
        raise located(error, "path", "path") from None
    return DocumentRef(
        path_id(request, "tenant_id"),
        path_id(request, "user_id"),
        path_id(request, "namespace"),
        checked,
    )


def path_id(request: ApiRequest, name: str) -> str:
    """A route parameter that is an identifier (``INVALID_IDENTIFIER`` at ``["path", name]``)."""
    try:
        return check_identifier(name, request.route_params.get(name, ""))
    except BadRequest as error:
        raise located(error, "path", name) from None


def optional_str(query: Mapping[str, str], name: str) -> str | None:
    """A query parameter that, when present, is an identifier."""
    value = query.get(name)
    try:
        return None if value is None else check_identifier(name, value)
    except BadRequest as error:
        raise located(error, "query", name) from None


def located(error: BadRequest, *where: str) -> BadRequest:
    """``error`` naming where a domain check (which knows no request) found the problem.
    A ``try`` rather than a context manager: free when nothing is raised (a GET checks four
    ids; a ``contextmanager`` costs ~1 µs each)."""
    error.details.setdefault("location", list(where))
    return error


def check_reason(reason: str, roles: frozenset[str]) -> None:
    """Only admin callers may record an ``admin_migration``."""
    if reason == "admin_migration" and "admin" not in roles:
        raise Forbidden(
            "reason admin_migration needs the admin role.", code="ROLE_FORBIDDEN", role="admin"
        )


def idempotency_key(request: ApiRequest) -> str:
    key = request.header("idempotency-key")
    if key is None:
        raise BadRequest(
            "Idempotency-Key header is required.",
            code="IDEMPOTENCY_KEY_REQUIRED",
            location=["header", "Idempotency-Key"],
        )
    if not _KEY.fullmatch(key):
        raise BadRequest(
            "Idempotency-Key must be 1-255 visible ASCII characters.",
            code="INVALID_IDEMPOTENCY_KEY",
            location=["header", "Idempotency-Key"],
        )
    return key


def precondition(request: ApiRequest) -> tuple[str | None, bool]:
    """``(if_match, create)`` from If-Match / If-None-Match: * (428 if neither). A header
    with an empty value names no version (an unset variable in a client's template), so
    it counts as absent: the write still needs a precondition."""
    if_match, if_none = _named(request, "if-match"), _named(request, "if-none-match")
    if if_match is not None and if_none is not None:
        raise _bad_precondition("Send If-Match or If-None-Match, not both.", "If-None-Match")
    if if_none is not None and if_none.strip() != "*":
        raise _bad_precondition("If-None-Match supports only '*'.", "If-None-Match")
    if if_match is not None and not _ETAG.fullmatch(if_match.strip()):
        raise _bad_precondition("If-Match must be one quoted ETag.", "If-Match")
    if if_match is None and if_none is None:
        raise PreconditionRequired("Send If-Match: <etag>, or If-None-Match: * to create.")
    return (if_match.strip() if if_match else None), if_none is not None


def _named(request: ApiRequest, header: str) -> str | None:
    value = request.header(header)
    return value if value is None or value.strip() else None


def _bad_precondition(message: str, header: str) -> BadRequest:
    return BadRequest(message, code="INVALID_PRECONDITION", location=["header", header])


def fingerprint(request: ApiRequest, caller_id: str, body: Mapping[str, Any]) -> str:
    """What makes two requests "the same" for an idempotency key. With ``rebase`` the
    If-Match is where to start from, not a condition of the outcome: a retry that re-read
    the document (its ETag moved on) is the same write."""
    parts = {
        "method": request.method,
        "route": dict(request.route_params),
        "caller": caller_id,
        "body": body,
        "if_match": None if body.get("rebase") is True else _named(request, "if-match"),
        "if_none_match": _named(request, "if-none-match"),
    }
    return hashlib.sha256(canonical(parts)).hexdigest()


def bounded_int(query: Mapping[str, str], name: str, default: int, top: int) -> int:
    text = query.get(name)
    if text is None:
        return default
    if not re.fullmatch(r"[0-9]{1,9}", text) or not 1 <= int(text) <= top:
        raise BadRequest(
            f"{name} must be an integer from 1 to {top}.",
            code="INVALID_QUERY",
            field=name,
            location=["query", name],
        )
    return int(text)


def pointer_query(query: Mapping[str, str], name: str, max_chars: int) -> str:
    """A required query parameter that is a JSON Pointer below the root (``/a/0``)."""
    text = query.get(name) or ""
    problem = None
    if not text:
        problem = f"{name} is required: a JSON Pointer (/section/0)."
    elif len(text) > max_chars:
        problem = f"{name} must be at most {max_chars} characters."
    else:
        try:
            pointers.parse(text)
        except ValueError as exc:
            problem = f"{name} must be a JSON Pointer: {exc}"
    if problem is not None:
        raise BadRequest(problem, code="INVALID_QUERY", field=name, location=["query", name])
    return text
