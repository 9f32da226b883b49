"""Parsing of request parts into typed values: every malformed input is a 400 here,
before any policy or storage runs (CONVENTIONS principle 6)."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from typing import Any

from memnet.api.http import ApiRequest
from memnet.envelope import canonical
from memnet.errors import BadRequest, Forbidden, PayloadTooLarge, PreconditionRequired
from memnet.identifiers import check_document_path, check_identifier
from memnet.layout import DocumentRef

MAX_EVIDENCE_CHARS = 4096
MAX_DEPTH = 64
REASONS = frozenset({"live_update", "replay_update", "admin_migration"})
_KEY = re.compile(r"[\x21-\x7e]{1,255}")
_ETAG = re.compile(r'(W/)?"[\x21\x23-\x7e]{1,200}"')


def json_body(request: ApiRequest, limit: int, allowed: frozenset[str] | None) -> dict[str, Any]:
    """The body as a JSON object with only ``allowed`` members (None: any)."""
    if len(request.body) > limit:
        raise PayloadTooLarge(f"Body exceeds {limit} bytes.", limit=limit)
    body = _parse(request.body)
    if not isinstance(body, dict):
        raise BadRequest("Body must be a JSON object.", code="MALFORMED_JSON")
    if allowed is None:
        return body
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise BadRequest(
            f"Unknown body fields: {unknown}.",
            code="UNKNOWN_FIELD",
            fields=unknown,
            allowed=sorted(allowed),
        )
    return body


def _parse(raw: bytes) -> Any:
    """Strict JSON: no NaN/Infinity, no lone surrogates, nesting at most MAX_DEPTH."""
    try:
        body = json.loads(raw or b"null", parse_constant=_refuse, parse_float=_finite)
        if _may_hold_surrogates(raw):
            json.dumps(body, ensure_ascii=False).encode()  # lone surrogates cannot be stored
    except (ValueError, UnicodeError, RecursionError) as exc:
        raise BadRequest(f"Body is not valid JSON: {_reason(exc)}", code="MALFORMED_JSON") from exc
    if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH and _depth(body) > MAX_DEPTH:
        raise BadRequest(f"Body nests deeper than {MAX_DEPTH} levels.", code="MALFORMED_JSON")
    return body


def _may_hold_surrogates(raw: bytes) -> bool:
    """Whether ``json.loads`` may have produced a surrogate: from a ``\\uD800``-``\\uDFFF``
    escape, from bytes ED A0-BF (it decodes with ``surrogatepass``; ED also starts other
    characters, which are then checked needlessly), or in UTF-16/32 (NUL in the first
    bytes). Otherwise the full check is skipped."""
    return b"\\ud" in raw or b"\\uD" in raw or b"\xed" in raw or b"\x00" in raw[:4]


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


def _depth(value: Any) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth <= MAX_DEPTH and isinstance(node, dict | list):
            children = node.values() if isinstance(node, dict) else node
            stack.extend((child, depth + 1) for child in children)
    return deepest


def document_ref(request: ApiRequest, path: str) -> DocumentRef:
    params = request.route_params
    return DocumentRef(
        check_identifier("tenant_id", params.get("tenant_id", "")),
        check_identifier("user_id", params.get("user_id", "")),
        check_identifier("namespace", params.get("namespace", "")),
        check_document_path(path),
    )


def optional_str(body: Mapping[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise BadRequest(f"{name} must be a string.", code="INVALID_FIELD", field=name)
    return check_identifier(name, value)


def reason(body: Mapping[str, Any], default: str) -> str:
    value = body.get("reason", default)
    if value not in REASONS:
        raise BadRequest(
            f"reason must be one of {sorted(REASONS)}.", code="INVALID_FIELD", field="reason"
        )
    return str(value)


def check_reason(reason: str, roles: frozenset[str]) -> None:
    """Only admin callers may record an ``admin_migration``."""
    if reason == "admin_migration" and "admin" not in roles:
        raise Forbidden(
            "reason admin_migration needs the admin role.", code="ROLE_FORBIDDEN", role="admin"
        )


def confidence(body: Mapping[str, Any]) -> float | None:
    value = body.get("confidence")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise BadRequest(
            "confidence must be a number from 0 to 1.", code="INVALID_FIELD", field="confidence"
        )
    return float(value)


def evidence(body: Mapping[str, Any]) -> dict[str, Any] | None:
    value = body.get("evidence")
    if value is None:
        return None
    if not isinstance(value, dict) or len(canonical(value)) > MAX_EVIDENCE_CHARS:
        raise BadRequest(
            f"evidence must be an object of at most {MAX_EVIDENCE_CHARS} chars.",
            code="INVALID_FIELD",
            field="evidence",
        )
    return value


def idempotency_key(request: ApiRequest) -> str:
    key = request.header("idempotency-key")
    if key is None:
        raise BadRequest("Idempotency-Key header is required.", code="IDEMPOTENCY_KEY_REQUIRED")
    if not _KEY.fullmatch(key):
        raise BadRequest(
            "Idempotency-Key must be 1-255 visible ASCII characters.",
            code="INVALID_IDEMPOTENCY_KEY",
        )
    return key


def precondition(request: ApiRequest) -> tuple[str | None, bool]:
    """``(if_match, create)`` from If-Match / If-None-Match: * (428 if neither)."""
    if_match, if_none = request.header("if-match"), request.header("if-none-match")
    if if_match is not None and if_none is not None:
        raise BadRequest("Send If-Match or If-None-Match, not both.", code="INVALID_PRECONDITION")
    if if_none is not None and if_none.strip() != "*":
        raise BadRequest("If-None-Match supports only '*'.", code="INVALID_PRECONDITION")
    if if_match is not None and not _ETAG.fullmatch(if_match.strip()):
        raise BadRequest("If-Match must be one quoted ETag.", code="INVALID_PRECONDITION")
    if if_match is None and if_none is None:
        raise PreconditionRequired("Send If-Match: <etag>, or If-None-Match: * to create.")
    return (if_match.strip() if if_match else None), if_none is not None


def fingerprint(request: ApiRequest, caller_id: str, body: Mapping[str, Any]) -> str:
    """What makes two requests "the same" for an idempotency key."""
    parts = {
        "method": request.method,
        "route": dict(request.route_params),
        "caller": caller_id,
        "body": body,
        "if_match": request.header("if-match"),
        "if_none_match": request.header("if-none-match"),
    }
    return hashlib.sha256(canonical(parts)).hexdigest()


def bounded_int(query: Mapping[str, str], name: str, default: int, top: int) -> int:
    text = query.get(name)
    if text is None:
        return default
    if not re.fullmatch(r"[0-9]{1,9}", text) or not 1 <= int(text) <= top:
        raise BadRequest(
            f"{name} must be an integer from 1 to {top}.", code="INVALID_QUERY", field=name
        )
    return int(text)
