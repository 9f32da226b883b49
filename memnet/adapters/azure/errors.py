"""What the Azure adapters share when they map SDK errors onto the port errors
(``memnet.ports.StorageError`` and its subclasses)."""

from __future__ import annotations

from azure.core.exceptions import (
    AzureError,
    ClientAuthenticationError,
    HttpResponseError,
    ServiceRequestError,
    ServiceResponseError,
)

TRANSIENT_STATUSES = frozenset({408, 429})


def is_unavailable(error: AzureError, status: int | None) -> bool:
    """A failure worth retrying later (503 to our callers): transport errors, throttling,
    server errors, and credentials that could not be obtained."""
    if isinstance(error, ServiceRequestError | ServiceResponseError | ClientAuthenticationError):
        return True
    return isinstance(error, HttpResponseError) and (
        status in TRANSIENT_STATUSES or (status is not None and status >= 500)
    )


def error_code(error: AzureError) -> str | None:
    """The storage error code (``x-ms-error-code``) as a plain string, if any."""
    code = getattr(error, "error_code", None)
    if code is None:
        response = getattr(error, "response", None)
        code = response.headers.get("x-ms-error-code") if response is not None else None
    return None if code is None else str(getattr(code, "value", code))
