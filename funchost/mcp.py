"""The local host's MCP endpoint: what the Azure Functions MCP extension does on Azure,
for the app's ``mcpToolTrigger`` functions, at the same path (docs/mcp.md).

MCP Streamable HTTP, stateless: each POST carries one JSON-RPC message and is answered
with one ``application/json`` body (the transport allows JSON instead of an event
stream); no session id is issued, so GET (a server-to-client stream) and DELETE (ending
a session) are 405. A tool call invokes the function with a context shaped like the
extension's ``ToolInvocationContext`` — arguments, and the request's headers under
``transport.properties.headers`` — so a tool authenticates as the caller, as on Azure.

Why not the MCP SDK's server: it is an ASGI application and this host is a stdlib HTTP
server; a bridge would add a thread, an event loop and a session manager to serve three
stateless methods. The SDK's pydantic types parse and serialise every message here.

One difference from the extension, on purpose: a function that returns the JSON of a
whole ``CallToolResult`` (as ``memnet.api.tools`` does) has it passed through, with its
``isError`` and structured content; the extension versions we read wrap any returned
string as one text block (docs/mcp.md, "On Azure").
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import azure.functions as func
import mcp.types as types
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION
from pydantic import BaseModel, ValidationError

from funchost.index import UserFunction, functions_of, invoke
from funchost.responses import RawResponse
from funchost.route_templates import new_request_id

logger = logging.getLogger("funchost")

MCP_PATH = "/runtime/webhooks/mcp"
ASSUMED_VERSION = "2025-03-26"  # the transport's rule when a request names no version
_JSON = "application/json"
_TYPES = {"float": "number", "datetime": "string"}  # the extension's names -> JSON Schema
_M = TypeVar("_M", bound=BaseModel)
_JSON_RANGES = frozenset({_JSON, "application/*", "*/*"})
_STREAM_RANGES = frozenset({"text/event-stream", "text/*", "*/*"})
# Result members of the stateless 2026-07-28 revision, which this endpoint does not speak.
_STATELESS_ONLY = ("resultType", "ttlMs", "cacheScope")


@dataclass(frozen=True)
class McpTool:
    tool: types.Tool
    function: UserFunction
    arg_name: str


def mcp_tools_of(app: func.FunctionApp) -> dict[str, McpTool]:
    """The app's MCP tools by tool name, from their ``mcpToolTrigger`` bindings."""
    found: dict[str, McpTool] = {}
    for function in functions_of(app).mcp_tools:
        tool = _tool(function.binding)
        found[tool.name] = McpTool(tool, function.function, function.arg_name)
    return found


def _tool(binding: Mapping[str, Any]) -> types.Tool:
    properties = json.loads(binding.get("toolProperties") or "[]")
    schema = {
        "type": "object",
        "properties": {p["propertyName"]: _property_schema(p) for p in properties},
        "required": [p["propertyName"] for p in properties if p.get("isRequired")],
    }
    return types.Tool(
        name=str(binding["toolName"]),
        description=binding.get("description"),
        input_schema=schema,
    )


def _property_schema(item: Mapping[str, Any]) -> dict[str, Any]:
    kind = str(item.get("propertyType") or "string")
    schema: dict[str, Any] = {"type": _TYPES.get(kind, kind)}
    if item.get("isArray"):
        schema = {"type": "array", "items": schema}
    return {**schema, "description": str(item.get("description") or "")}


class McpError(Exception):
    """A JSON-RPC error answer: its code and message, and the HTTP status it travels in."""

    def __init__(self, code: int, message: str, status: int = 200, request_id: Any = None):
        super().__init__(message)
        self.code, self.message, self.status, self.request_id = code, message, status, request_id

    def response(self) -> RawResponse:
        error = types.ErrorData(code=self.code, message=self.message)
        message = types.JSONRPCError(jsonrpc="2.0", id=self.request_id, error=error)
        body = message.model_dump(by_alias=True, mode="json", exclude_none=True)
        body["id"] = self.request_id  # null when unknown: JSON-RPC requires the member
        return RawResponse(self.status, [("Content-Type", _JSON)], json.dumps(body).encode())


def refusal(status: int, message: str, request_id: str) -> RawResponse:
    """The host's own refusal of an MCP request (a body too large, ...) as JSON-RPC."""
    response = McpError(types.INVALID_REQUEST, message, status).response()
    response.headers.append(("x-request-id", request_id))
    return response


@dataclass(frozen=True)
class ServerOptions:
    """``extensions.mcp`` of host.json, as the extension reads it (its defaults)."""

    name: str = "Azure Functions MCP server"
    version: str = "1.0.0"
    instructions: str | None = None

    @classmethod
    def from_host_json(cls, host_json: str | Path = "host.json") -> ServerOptions:
        path = Path(host_json)
        if not path.is_file():
            return cls()
        try:
            config = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise ValueError(f"{path}: malformed JSON: {exc}") from exc
        options = config.get("extensions", {}).get("mcp", {})
        default = cls()
        return cls(
            str(options.get("serverName") or default.name),
            str(options.get("serverVersion") or default.version),
            options.get("instructions"),
        )


class McpEndpoint:
    path = MCP_PATH  # as on Azure: the route prefix does not apply to it

    def __init__(self, app: func.FunctionApp, options: ServerOptions | None = None) -> None:
        self.tools = mcp_tools_of(app)
        self.options = options or ServerOptions.from_host_json()

    def handle(self, method: str, headers: Mapping[str, str], body: bytes) -> RawResponse:
        """One HTTP request to the endpoint; ``headers`` have lower-case names."""
        if method != "POST":
            response = McpError(types.INVALID_REQUEST, "Only POST is served here.", 405)
            answer = response.response()
            answer.headers.append(("Allow", "POST"))
            return answer
        try:
            return self._post(headers, body)
        except McpError as error:
            return error.response()
        except Exception:  # a bug of this endpoint: still a JSON-RPC answer
            return _internal_error(None)

    def _post(self, headers: Mapping[str, str], body: bytes) -> RawResponse:
        _check_headers(headers)
        message = _message(body)
        if not isinstance(message, types.JSONRPCRequest):
            return RawResponse(202, [], b"")  # a notification, or a response to us
        try:
            result = self._answer(message, headers)
        except McpError as error:
            error.request_id = message.id
            raise
        except Exception:  # RecursionError included: an answer, never a dropped connection
            return _internal_error(message.id)
        dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        for name in _STATELESS_ONLY:
            dumped.pop(name, None)
        return _json(200, types.JSONRPCResponse(jsonrpc="2.0", id=message.id, result=dumped))

    def _answer(self, request: types.JSONRPCRequest, headers: Mapping[str, str]) -> BaseModel:
        params = request.params or {}
        if request.method == "initialize":
            return _initialize(_parsed(types.InitializeRequestParams, params), self.options)
        if request.method == "ping":
            return types.EmptyResult()
        if request.method == "tools/list":
            return types.ListToolsResult(tools=[t.tool for t in self.tools.values()])
        if request.method == "tools/call":
            return self._call(_parsed(types.CallToolRequestParams, params), headers)
        raise McpError(types.METHOD_NOT_FOUND, f"Method not found: {request.method}")

    def _call(
        self, params: types.CallToolRequestParams, headers: Mapping[str, str]
    ) -> types.CallToolResult:
        tool = self.tools.get(params.name)
        if tool is None:
            raise McpError(types.INVALID_PARAMS, f"Unknown tool: {params.name}")
        context = json.dumps(_context(params, headers))
        try:
            returned = invoke(tool.function, tool.arg_name, context)
        except Exception:
            request_id = new_request_id()
            logger.exception("tool %s failed (request_id=%s)", params.name, request_id)
            text = f"An error occurred invoking '{params.name}' (request_id={request_id})."
            return types.CallToolResult(content=[_text(text)], is_error=True)
        return _tool_result(returned)


def _check_headers(headers: Mapping[str, str]) -> None:
    """As the extension: the client accepts JSON and event streams, sends JSON, and
    names a protocol revision this endpoint speaks (400 otherwise, by the transport); a
    compressed body is refused, not read as JSON."""
    accepted = {
        part.partition(";")[0].strip().lower() for part in headers.get("accept", "").split(",")
    }
    if not (accepted & _JSON_RANGES and accepted & _STREAM_RANGES):
        message = "Not Acceptable: the client must accept application/json and text/event-stream"
        raise McpError(-32000, message, 406)
    if headers.get("content-type", "").partition(";")[0].strip().lower() != _JSON:
        raise McpError(types.INVALID_REQUEST, "Content-Type must be application/json.", 415)
    if headers.get("content-encoding", "identity").strip().lower() not in ("", "identity"):
        message = "Content-Encoding is not supported: send the body uncompressed."
        raise McpError(types.INVALID_REQUEST, message, 415)  # as the API does (docs/api.md)
    version = headers.get("mcp-protocol-version", ASSUMED_VERSION)
    if version not in HANDSHAKE_PROTOCOL_VERSIONS:
        raise McpError(types.INVALID_REQUEST, f"Unsupported protocol version: {version}", 400)


def _internal_error(message_id: Any) -> RawResponse:
    """-32603 in a 500, naming a request id that is in the log line with the traceback."""
    request_id = new_request_id()
    logger.exception("MCP request failed (request_id=%s)", request_id)
    text = f"Internal error (request_id={request_id})."
    response = McpError(types.INTERNAL_ERROR, text, 500, message_id).response()
    response.headers.append(("x-request-id", request_id))
    return response


def _message(body: bytes) -> types.JSONRPCMessage:
    try:  # UTF-8 only (MCP's JSON-RPC, RFC 8259 8.1): json.loads(bytes) would guess UTF-16/32
        data = json.loads(body.decode("utf-8"))
    except (ValueError, RecursionError):  # UnicodeDecodeError included; too deep to parse
        raise McpError(types.PARSE_ERROR, "Parse error: the body is not JSON.", 400) from None
    if isinstance(data, list):
        raise McpError(types.INVALID_REQUEST, "JSON-RPC batches are not supported.", 400)
    _check_id(data)
    try:
        message: types.JSONRPCMessage = types.jsonrpc_message_adapter.validate_python(data)
    except ValidationError:
        raise McpError(types.INVALID_REQUEST, "Not a JSON-RPC 2.0 message.", 400) from None
    return message


def _check_id(data: Any) -> None:
    """A request's ``id`` is a string or an integer (MCP: never null). Any other id would
    validate as a notification, answered 202 and never executed, and the client would
    wait forever for its answer."""
    if not isinstance(data, dict) or "method" not in data or "id" not in data:
        return
    found = data["id"]
    if isinstance(found, bool) or not isinstance(found, str | int):
        raise McpError(types.INVALID_REQUEST, "The id must be a string or an integer.", 400)


def _parsed(model: type[_M], params: Mapping[str, Any]) -> _M:
    try:
        return model.model_validate(params)
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())
        raise McpError(types.INVALID_PARAMS, f"Invalid params: {problems}") from None


def _initialize(
    params: types.InitializeRequestParams, options: ServerOptions
) -> types.InitializeResult:
    """The client's revision when this endpoint speaks it, else the newest it speaks."""
    asked = params.protocol_version
    version = asked if asked in HANDSHAKE_PROTOCOL_VERSIONS else LATEST_HANDSHAKE_VERSION
    return types.InitializeResult(
        protocol_version=version,
        capabilities=types.ServerCapabilities(tools=types.ToolsCapability(list_changed=False)),
        server_info=types.Implementation(name=options.name, version=options.version),
        instructions=options.instructions,
    )


def _context(params: types.CallToolRequestParams, headers: Mapping[str, str]) -> dict[str, Any]:
    """The extension's ``ToolInvocationContext`` (``sesssionId``: its spelling)."""
    transport = {"name": "http", "sesssionId": None, "properties": {"headers": dict(headers)}}
    return {
        "name": params.name,
        "arguments": params.arguments or {},
        "sessionid": None,
        "clientinfo": None,
        "transport": transport,
    }


def _tool_result(returned: Any) -> types.CallToolResult:
    """A returned ``CallToolResult`` JSON as it is; any other value as one text block
    (what the extension does with every returned value); None as no content."""
    if returned is None:
        return types.CallToolResult(content=[])
    text = returned if isinstance(returned, str) else str(returned)
    try:
        return types.CallToolResult.model_validate_json(text)
    except ValidationError:
        return types.CallToolResult(content=[_text(text)])


def _text(text: str) -> types.TextContent:
    return types.TextContent(type="text", text=text)


def _json(status: int, message: BaseModel) -> RawResponse:
    body = message.model_dump_json(by_alias=True, exclude_none=True).encode()
    return RawResponse(status, [("Content-Type", _JSON)], body)
