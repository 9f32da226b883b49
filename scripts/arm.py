"""The few Azure Resource Manager calls the hooks make, over azure-core (the Azure SDK's
own pipeline: bearer token, retries of 408/429/5xx with the server's Retry-After), as the
deploying principal. No management SDK is needed for three REST calls.

Errors are :class:`ArmError` with the status and ARM's error code; messages have any
``code=`` query value (a function key in a webhook URL) masked before they are kept."""

from __future__ import annotations

import json
import re
from typing import Any

from azure.core import PipelineClient
from azure.core.credentials import TokenCredential
from azure.core.pipeline.policies import (
    BearerTokenCredentialPolicy,
    HeadersPolicy,
    RetryPolicy,
)
from azure.core.pipeline.transport import HttpTransport
from azure.core.rest import HttpRequest, HttpResponse

ENDPOINT = "https://management.azure.com"  # Azure public cloud
SCOPE = "https://management.azure.com/.default"
_KEY_IN_URL = re.compile(r"(code=)[^&\s\"']+", re.IGNORECASE)
TERMINAL = frozenset({"Succeeded", "Failed", "Canceled"})


def masked(text: str) -> str:
    """``text`` with every ``code=<key>`` of a URL replaced by ``code=***``."""
    return _KEY_IN_URL.sub(r"\1***", text)


class ArmError(Exception):
    """ARM answered ``status`` (``code``: ARM's error code, when it gave one)."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {masked(message)}")
        self.status, self.code = status, code


class Arm:
    """Requests to ``endpoint`` with a token for ARM from ``credential``. ``transport``
    and ``retry_total`` are for tests (the default transport is azure-core's)."""

    def __init__(
        self,
        credential: TokenCredential,
        *,
        endpoint: str = ENDPOINT,
        transport: HttpTransport | None = None,  # type: ignore[type-arg]
        retry_total: int = 3,
    ) -> None:
        policies = [
            HeadersPolicy({"Accept": "application/json"}),
            RetryPolicy(retry_total=retry_total),
            BearerTokenCredentialPolicy(credential, SCOPE),
        ]
        options: dict[str, Any] = {} if transport is None else {"transport": transport}
        self._client: PipelineClient[HttpRequest, HttpResponse] = PipelineClient(
            endpoint, policies=policies, **options
        )

    def post(self, path: str, api_version: str) -> Any:
        return self._json(self._send("POST", path, api_version))

    def get(self, path: str, api_version: str) -> Any:
        return self._json(self._send("GET", path, api_version))

    def put(self, path: str, api_version: str, body: Any) -> HttpResponse:
        return self._send("PUT", path, api_version, body)

    def get_url(self, url: str) -> Any:
        """An absolute URL ARM handed out (an ``Azure-AsyncOperation`` status)."""
        return self._json(self._checked(HttpRequest("GET", url)))

    def _send(self, method: str, path: str, api_version: str, body: Any = None) -> HttpResponse:
        url = self._client.format_url(path)
        request = HttpRequest(method, url, params={"api-version": api_version}, json=body)
        return self._checked(request)

    def _checked(self, request: HttpRequest) -> HttpResponse:
        response = self._client.send_request(request)
        if response.status_code >= 400:
            raise error_of(response)
        return response

    @staticmethod
    def _json(response: HttpResponse) -> Any:
        return json.loads(response.text()) if response.text() else None


def error_of(response: HttpResponse) -> ArmError:
    """ARM's ``{"error": {"code", "message"}}``, or the bare status."""
    try:
        error = json.loads(response.text()).get("error") or {}
    except (ValueError, AttributeError):
        error = {}
    return ArmError(response.status_code, str(error.get("code", "")), str(error.get("message", "")))
