"""The one place the core's outcomes become HTTP statuses: a status per domain error
class, the headers some of them earn, the spec 10.7 payload (docs/architecture.md, "One
error tree, mapped at the edge"), and 201/200 for a write that did or did not create its
resource."""

from __future__ import annotations

from memnet.api.http import ApiResponse
from memnet.domain.errors import (
    BadRequest,
    Conflict,
    EtagMismatch,
    Forbidden,
    Gone,
    MemnetError,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    PreconditionRequired,
    TooManyRequests,
    Unauthenticated,
    Unavailable,
    Unprocessable,
    UnsupportedMediaType,
)

STATUS: dict[type[MemnetError], int] = {
    BadRequest: 400,
    Unauthenticated: 401,
    Forbidden: 403,
    NotFound: 404,
    MethodNotAllowed: 405,
    Conflict: 409,
    Gone: 410,
    EtagMismatch: 412,
    PayloadTooLarge: 413,
    UnsupportedMediaType: 415,
    Unprocessable: 422,
    PreconditionRequired: 428,
    TooManyRequests: 429,
    Unavailable: 503,
}


def status_of(error: MemnetError) -> int:
    """The status of the nearest mapped class of ``error`` (500 for the bare base)."""
    return next((STATUS[k] for k in type(error).__mro__ if k in STATUS), 500)


def headers_of(error: MemnetError) -> dict[str, str]:
    headers: dict[str, str] = {}
    if isinstance(error, Unauthenticated):
        headers["WWW-Authenticate"] = 'Bearer realm="mem.net"'
    if isinstance(error, MethodNotAllowed):
        headers["Allow"] = str(error.details.get("allow", ""))
    if isinstance(error, UnsupportedMediaType):  # RFC 9110 12.5.3: the codings it takes
        headers["Accept-Encoding"] = "identity"
    if isinstance(error, Unavailable):
        headers["Retry-After"] = str(error.retry_after or 1)
    elif error.retry_after is not None:
        headers["Retry-After"] = str(error.retry_after)
    return headers


def error_response(error: MemnetError, request_id: str) -> ApiResponse:
    payload = {
        "error": {
            "code": error.code,
            "message": error.message,
            "request_id": request_id,
            "details": error.details,
        }
    }
    return ApiResponse.json(status_of(error), payload, headers_of(error))
