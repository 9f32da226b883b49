"""The client's exception tree, written out once (as httpx does) and mapped from a
response in one place, :func:`error_from_response`.

Every error the server answers carries the spec 10.7 payload
``{"error": {"code", "message", "request_id", "details"}}``; the exception carries the
same fields plus the HTTP ``status``, so a caller can branch on the class (the status)
or on ``code`` (the reason) without parsing text. Transport failures that outlive the
client's retries are :class:`TransportError`, chained to the httpx exception.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

__all__ = [
    "MemnetError",
    "TransportError",
    "InvalidIdentifier",
    "ApiError",
    "BadRequest",
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "Conflict",
    "Gone",
    "PreconditionFailed",
    "PreconditionRequired",
    "PayloadTooLarge",
    "UnsupportedMediaType",
    "Unprocessable",
    "RateLimited",
    "ServerError",
    "ServiceUnavailable",
    "InvalidResponse",
    "UpdateConflict",
    "error_from_response",
]


class MemnetError(Exception):
    """Base of everything this package raises on purpose."""


class TransportError(MemnetError):
    """The server could not be reached (or the connection broke) on every attempt."""


class InvalidIdentifier(MemnetError, ValueError):
    """An id that cannot be one path segment (``""``, ``"."``, ``".."``), refused
    before any I/O: sent, it would address another route. Also a ``ValueError``, as
    the argument is wrong, not the server; ``code`` is the server's for the same id."""

    code = "INVALID_IDENTIFIER"

    def __init__(self, value: str) -> None:
        super().__init__(f"{value!r} is not a valid identifier or document path segment")
        self.value = value


class ApiError(MemnetError):
    """The server answered with an error payload."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        request_id: str | None = None,
        details: Mapping[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message = status, code, message
        self.request_id = request_id
        self.details: Mapping[str, Any] = details or {}
        self.retry_after = retry_after


class BadRequest(ApiError):
    """400: the request could not be parsed (a bad field, identifier, JSON, patch)."""


class Unauthorized(ApiError):
    """401: no credential, or one the server does not accept (a bad or expired token)."""


class Forbidden(ApiError):
    """403: authenticated, but not allowed (tenant, role, profile, service, user)."""


class NotFound(ApiError):
    """404: no such document, event, snapshot, replay, job, receipt or hold."""


class Conflict(ApiError):
    """409: an idempotency key reused for another request, an existing id, a forget
    in progress."""


class Gone(ApiError):
    """410: what was asked for existed once and was removed for good (a version past
    the audit retention, ``HISTORY_TRUNCATED``, or before a conversation's retraction,
    ``HISTORY_FORGOTTEN``)."""


class PreconditionFailed(ApiError):
    """412: the ``If-Match`` ETag is stale; ``latest_etag`` is the current one."""

    @property
    def latest_etag(self) -> str | None:
        value = self.details.get("latest_etag")
        return value if isinstance(value, str) else None


class PreconditionRequired(ApiError):
    """428: a write sent with neither ``If-Match`` nor ``If-None-Match: *``."""


class PayloadTooLarge(ApiError):
    """413: the body is over the server's limit."""


class UnsupportedMediaType(ApiError):
    """415: the body is not JSON in UTF-8."""


class Unprocessable(ApiError):
    """422: policy or validation refused the write; ``violations`` lists every problem."""

    @property
    def violations(self) -> list[Mapping[str, Any]]:
        value = self.details.get("violations")
        return list(value) if isinstance(value, list) else []


class RateLimited(ApiError):
    """429: a quota is spent; ``retry_after`` says when the window resets."""


class ServerError(ApiError):
    """5xx other than 503: a server bug; quote ``request_id`` when reporting it."""


class ServiceUnavailable(ServerError):
    """503: storage or the app itself is not available just now."""


class InvalidResponse(ApiError):
    """A success status whose body is not the JSON the route answers with (a proxy's or
    captive portal's HTML page, an empty body): ``message`` is the start of the body,
    the exception is chained to the parsing error."""

    @classmethod
    def of(cls, response: httpx.Response, problem: Exception) -> InvalidResponse:
        return cls(
            response.status_code,
            "INVALID_RESPONSE",
            f"unexpected answer body ({problem}): {response.text[:200]!r}",
            response.headers.get("x-request-id"),
        )


class UpdateConflict(MemnetError):
    """:meth:`MemnetClient.update` lost the race more often than its bound allowed."""

    def __init__(self, attempts: int, last: PreconditionFailed) -> None:
        super().__init__(f"document changed under {attempts} attempts; last: {last}")
        self.attempts, self.last = attempts, last


_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: BadRequest,
    409: Conflict,
    410: Gone,
    412: PreconditionFailed,
    413: PayloadTooLarge,
    415: UnsupportedMediaType,
    422: Unprocessable,
    428: PreconditionRequired,
    429: RateLimited,
    503: ServiceUnavailable,
}


def error_from_response(response: httpx.Response) -> ApiError:
    """The exception for an error response, whatever its body (a proxy's HTML page
    still gives a status, a request id from the header and the start of the text)."""
    payload = _error_payload(response)
    status = response.status_code
    cls = _BY_STATUS.get(status) or (ServerError if status >= 500 else ApiError)
    return cls(
        status,
        str(payload.get("code") or f"HTTP_{status}"),
        str(payload.get("message") or response.reason_phrase or response.text[:200]),
        payload.get("request_id") or response.headers.get("x-request-id"),
        payload.get("details") if isinstance(payload.get("details"), Mapping) else None,
        retry_after_seconds(response),
    )


def _error_payload(response: httpx.Response) -> Mapping[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    error = body.get("error") if isinstance(body, Mapping) else None
    return error if isinstance(error, Mapping) else {}


def retry_after_seconds(response: httpx.Response) -> float | None:
    """``Retry-After`` in seconds (the server sends whole seconds; an HTTP date, which
    it never sends, is ignored rather than parsed)."""
    value = response.headers.get("retry-after", "").strip()
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None
