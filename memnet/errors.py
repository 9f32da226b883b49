"""The error hierarchy of spec 10.7, written out once.

Each class knows its ``code`` and HTTP ``status``; :mod:`memnet.api.render` turns any of
them into the spec's error payload. Anything else that escapes becomes a bare 500.
"""

from __future__ import annotations

from typing import Any


class MemnetError(Exception):
    """Base of every error the API reports. Carries data, never a stack trace."""

    status = 500
    code = "INTERNAL"

    def __init__(self, message: str, *, code: str | None = None, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details: dict[str, Any] = details

    def headers(self) -> dict[str, str]:
        """Extra response headers this error carries (e.g. ``Retry-After``)."""
        return {}


class BadRequest(MemnetError):
    status = 400
    code = "BAD_REQUEST"


class Unauthenticated(MemnetError):
    status = 401
    code = "UNAUTHENTICATED"

    def headers(self) -> dict[str, str]:
        return {"WWW-Authenticate": 'Bearer realm="mem.net"'}


class Forbidden(MemnetError):
    status = 403
    code = "FORBIDDEN"


class NotFound(MemnetError):
    status = 404
    code = "NOT_FOUND"


class Conflict(MemnetError):
    status = 409
    code = "CONFLICT"

    def __init__(self, message: str, *, retry_after: int | None = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.retry_after = retry_after

    def headers(self) -> dict[str, str]:
        return {} if self.retry_after is None else {"Retry-After": str(self.retry_after)}


class PreconditionFailed(MemnetError):
    status = 412
    code = "ETAG_MISMATCH"


class PreconditionRequired(MemnetError):
    status = 428
    code = "PRECONDITION_REQUIRED"


class Unprocessable(MemnetError):
    """Policy, schema or limit violations, reported together (CONVENTIONS principle 6)."""

    status = 422
    code = "VALIDATION_FAILED"


class PayloadTooLarge(MemnetError):
    status = 413
    code = "PAYLOAD_TOO_LARGE"


class UnsupportedMediaType(MemnetError):
    status = 415
    code = "UNSUPPORTED_MEDIA_TYPE"


class Unavailable(MemnetError):
    status = 503
    code = "DEPENDENCY_UNAVAILABLE"

    def headers(self) -> dict[str, str]:
        return {"Retry-After": "1"}


class ConfigError(Exception):
    """A broken profile, schema, callers file or setting. Stops startup; names file and field."""

    def __init__(self, source: str, field: str, problem: str) -> None:
        super().__init__(f"{source}: {field}: {problem}")
        self.source = source
        self.field = field
        self.problem = problem
