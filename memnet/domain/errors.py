"""The error tree of spec 10.7, written out once, in the domain's terms.

Services and the domain raise these; each knows its spec ``code`` and carries data
(``details``, and ``retry_after`` where waiting helps), never an HTTP status: only
:mod:`memnet.api.errors` maps them to statuses and headers. Anything else that escapes
becomes a bare 500 at the edge.
"""

from __future__ import annotations

from typing import Any


class MemnetError(Exception):
    """Base of every error the API reports. Carries data, never a stack trace."""

    code = "INTERNAL"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        retry_after: int | None = None,
        **details: Any,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.retry_after = retry_after
        self.details: dict[str, Any] = details


class BadRequest(MemnetError):
    """The request cannot be parsed: malformed JSON, an unknown field, a bad identifier."""

    code = "BAD_REQUEST"


class Unauthenticated(MemnetError):
    """No caller could be established from the request."""

    code = "UNAUTHENTICATED"


class Forbidden(MemnetError):
    """The caller may not do this (tenant, role, profile, service)."""

    code = "FORBIDDEN"


class NotFound(MemnetError):
    code = "NOT_FOUND"


class Gone(MemnetError):
    """What was asked for existed but is kept no longer: past the audit horizon, or
    older than a retraction (docs/decisions.md, "Versions of a document")."""

    code = "GONE"


class Conflict(MemnetError):
    """The request collides with another (an idempotency key, an existing event)."""

    code = "CONFLICT"


class EtagMismatch(MemnetError):
    """The document is not at the version the writer named (``details.latest_etag``)."""

    code = "ETAG_MISMATCH"


class PreconditionRequired(MemnetError):
    """A write named no version to apply to (neither If-Match nor If-None-Match: *)."""

    code = "PRECONDITION_REQUIRED"


class Unprocessable(MemnetError):
    """Policy, schema or limit violations, reported together (docs/architecture.md,
    "Parse, then check, then apply")."""

    code = "VALIDATION_FAILED"


class MethodNotAllowed(MemnetError):
    """The resource exists under this path but not for this method (``details.allow``)."""

    code = "METHOD_NOT_ALLOWED"


class PayloadTooLarge(MemnetError):
    code = "PAYLOAD_TOO_LARGE"


class UnsupportedMediaType(MemnetError):
    """A body that is not JSON in UTF-8."""

    code = "UNSUPPORTED_MEDIA_TYPE"


class TooManyRequests(MemnetError):
    """A request quota is spent for now (spec 10.7: per user or per service);
    ``retry_after`` says when the window resets."""

    code = "QUOTA_EXCEEDED"


class Unavailable(MemnetError):
    """A dependency (storage, queue, index) cannot be reached; retrying may succeed."""

    code = "DEPENDENCY_UNAVAILABLE"


class ConfigError(Exception):
    """A broken profile, schema, callers file or setting. Stops startup; names file and field."""

    def __init__(self, source: str, field: str, problem: str) -> None:
        super().__init__(f"{source}: {field}: {problem}")
        self.source = source
        self.field = field
        self.problem = problem
