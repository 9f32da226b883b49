"""One tool call: the context the Azure Functions MCP extension hands the function, the
API requests a tool makes as the caller, and the MCP tool result it answers with.

The extension passes a JSON string (its ``ToolInvocationContext``): ``name``,
``arguments``, ``sessionid``, ``clientinfo`` and ``transport`` — whose
``properties.headers`` are the HTTP headers of the MCP request (Streamable HTTP; see
docs/mcp.md for the source). Those headers are what the tool authenticates with, so a
tool can do exactly what its caller could do over HTTP, no more.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from memnet.api.endpoint import Endpoint, ServicesSource
from memnet.api.http import JSON, ApiRequest, ApiResponse
from memnet.domain import pointers
from memnet.domain.errors import BadRequest

# Headers a tool sets on its own requests: the MCP request's own never reach the API.
_OWN_HEADERS = frozenset(
    {
        "content-type",
        "content-length",
        "transfer-encoding",
        "idempotency-key",
        "if-match",
        "if-none-match",
    }
)


# App Service Authentication's identity headers. EasyAuth sets (and strips a client's)
# on the HTTP routes; that it covers /runtime/webhooks/mcp is not verified (and an
# ``excludedPaths`` entry would skip it), so a tool trusting them could be handed a forged
# principal. Tools drop them: MEMNET_AUTH=appservice does not authenticate tool calls
# (docs/mcp.md, "Authentication").
_PLATFORM_PREFIXES = ("x-ms-client-principal", "x-ms-token-")


def _forwarded(name: str) -> bool:
    return name not in _OWN_HEADERS and not name.startswith(_PLATFORM_PREFIXES)


@dataclass(frozen=True)
class Invocation:
    arguments: Mapping[str, Any]
    headers: Mapping[str, str]  # lower-case names; the tool's own and platform ones removed
    services: ServicesSource  # what the API handlers the tool calls are handed


def parse_context(context: str, services: ServicesSource) -> Invocation:
    """The arguments and caller headers of the extension's context (400 if malformed)."""
    try:
        data = json.loads(context)
    except ValueError:
        raise BadRequest("The tool context is not JSON.", code="MALFORMED_JSON") from None
    if not isinstance(data, dict):
        raise BadRequest("The tool context is not a JSON object.", code="MALFORMED_JSON")
    arguments = data.get("arguments") or {}
    if not isinstance(arguments, dict):
        raise BadRequest("Tool arguments must be an object.", code="INVALID_ARGUMENT")
    return Invocation(arguments, _headers(data.get("transport")), services)


def _headers(transport: Any) -> dict[str, str]:
    properties = transport.get("properties") if isinstance(transport, dict) else None
    headers = properties.get("headers") if isinstance(properties, dict) else None
    if not isinstance(headers, dict):
        return {}
    return {
        str(name).lower(): value
        for name, value in headers.items()
        if isinstance(value, str) and _forwarded(str(name).lower())
    }


@dataclass(frozen=True)
class ToolResult:
    """An MCP ``CallToolResult``: the payload as structured content and, as the MCP
    specification recommends for clients that read only text, as JSON text too."""

    payload: Mapping[str, Any]
    is_error: bool = False

    def to_json(self) -> str:
        text = json.dumps(self.payload, separators=(",", ":"))  # ASCII: lone surrogates too
        content = [{"type": "text", "text": text}]
        result = {"content": content, "structuredContent": self.payload, "isError": self.is_error}
        return json.dumps(result, separators=(",", ":"))


class ApiFailure(Exception):
    """An API request of the tool answered with an error (its status and payload, and
    its ``Retry-After`` in seconds, carried into the tool error as ``retry_after``)."""

    def __init__(
        self, status: int, payload: Mapping[str, Any], retry_after: int | None = None
    ) -> None:
        super().__init__(status)
        self.status, self.payload, self.retry_after = status, payload, retry_after

    @property
    def code(self) -> str | None:
        error = self.payload.get("error")
        return str(error.get("code")) if isinstance(error, dict) else None

    def result(self, **done: Any) -> ToolResult:
        """The tool error, with what the tool had already done (``done``)."""
        wait = {} if self.retry_after is None else {"retry_after": self.retry_after}
        return ToolResult({**done, "status": self.status, **wait, **self.payload}, is_error=True)

    @classmethod
    def of(cls, response: ApiResponse) -> ApiFailure:
        return cls(response.status, _payload(response), _retry_after(response))


def error_result(response: ApiResponse) -> ToolResult:
    return ApiFailure.of(response).result()


def _retry_after(response: ApiResponse) -> int | None:
    """The response's ``Retry-After`` (the API sends whole seconds), else None."""
    value = next((v for k, v in response.headers.items() if k.lower() == "retry-after"), None)
    return int(value) if value is not None and pointers.is_digits(value.strip()) else None


@dataclass(frozen=True)
class ApiCall:
    """One request to an API handler, as the HTTP route would make it."""

    method: str
    path: str
    route_params: Mapping[str, str]
    body: Mapping[str, Any] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)

    def send(self, handler: Endpoint, call: Invocation) -> Any:
        """The response payload, as ``call``'s caller; raises :class:`ApiFailure` for an
        error status."""
        body = b"" if self.body is None else json.dumps(self.body).encode()
        headers = {**call.headers, **self.headers, "content-type": JSON}
        request = ApiRequest.of(self.method, self.path, self.route_params, headers, {}, body)
        response = handler(request, call.services)
        if response.status >= 400:
            raise ApiFailure.of(response)
        return _payload(response)


def _payload(response: ApiResponse) -> dict[str, Any]:
    value = json.loads(response.body) if response.body else {}
    return value if isinstance(value, dict) else {"value": value}


# -- arguments -------------------------------------------------------------------------------


def _invalid(name: str, wanted: str) -> BadRequest:
    return BadRequest(f"{name} must be {wanted}.", code="INVALID_ARGUMENT", field=name)


def text_arg(args: Mapping[str, Any], name: str, *, required: bool = False) -> str | None:
    value = args.get(name)
    if value is None and required:
        raise BadRequest(f"{name} is required.", code="MISSING_FIELD", field=name)
    if value is not None and not isinstance(value, str):
        raise _invalid(name, "a string")
    return value


def flag_arg(args: Mapping[str, Any], name: str) -> bool:
    """``null`` is false, as an absent flag (models fill optional arguments with null)."""
    value = args.get(name)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise _invalid(name, "true or false")
    return value


def number_arg(args: Mapping[str, Any], name: str, *, integer: bool = False) -> Any:
    """A number as given (the API checks its range); None when absent."""
    value = args.get(name)
    kinds = (int,) if integer else (int, float)
    if value is not None and (isinstance(value, bool) or not isinstance(value, kinds)):
        raise _invalid(name, "an integer" if integer else "a number")
    return value


def texts_arg(args: Mapping[str, Any], name: str) -> list[str] | None:
    value = args.get(name)
    if value is not None and (
        not isinstance(value, list) or not all(isinstance(v, str) for v in value)
    ):
        raise _invalid(name, "a list of strings")
    return value
