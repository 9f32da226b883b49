"""Azure SDK exceptions as the storage SDKs raise them, for the error-mapping tests of the
Azure adapters (built, not mocked: real ``azure.core`` exception classes)."""

from __future__ import annotations

from dataclasses import dataclass, field

from azure.core.exceptions import AzureError, HttpResponseError


@dataclass
class _Response:
    """Just enough of an azure-core HTTP response to construct an HttpResponseError."""

    status_code: int
    reason: str = "reason"
    headers: dict[str, str] = field(default_factory=dict)

    def text(self) -> str:
        return ""


def http_error(status: int, code: str | None = None) -> HttpResponseError:
    headers = {"x-ms-error-code": code} if code else {}
    return HttpResponseError("boom", response=_Response(status, headers=headers))  # type: ignore[arg-type]


def with_code(error: AzureError, code: str) -> AzureError:
    error.error_code = code  # type: ignore[attr-defined]  # as the storage SDK sets it
    return error
