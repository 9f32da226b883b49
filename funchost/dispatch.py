"""One HTTP request to one function call of the app (v2 model), no sockets involved:
routing, the request and response conversions, and a 500 for a function that raises."""

from __future__ import annotations

import logging
from urllib.parse import parse_qsl

import azure.functions as func

from funchost.index import FunctionIndex, functions_of, invoke
from funchost.mcp import McpEndpoint
from funchost.responses import RawResponse, json_error
from funchost.route_templates import (
    Resolution,
    Router,
    error_body,
    new_request_id,
    not_routed_body,
    read_route_prefix,
)

logger = logging.getLogger("funchost")

_TEXTUAL_SUFFIXES = ("json", "xml", "javascript")


class FunctionHost:
    """Turns one HTTP request into one function call; no sockets involved."""

    def __init__(self, app: func.FunctionApp, route_prefix: str | None = None) -> None:
        self.index: FunctionIndex = functions_of(app)
        self.prefix = (read_route_prefix() if route_prefix is None else route_prefix).strip("/")
        self.router = Router(self.index.http_routes, self.prefix)
        self.mcp = McpEndpoint(app)  # the MCP extension's part (funchost/mcp.py)

    def dispatch(
        self, method: str, target: str, headers: list[tuple[str, str]], body: bytes, base_url: str
    ) -> RawResponse:
        path, _, query = target.partition("?")
        if path == self.mcp.path:
            return self.mcp.handle(method.upper(), _merge_headers(headers), body)
        resolution = self.router.resolve(method, path)
        route = resolution.route
        if route is None:
            return _not_routed(resolution, method, path)
        request = func.HttpRequest(
            method.upper(),
            base_url + target,
            headers=_merge_headers(headers),
            params=_query_params(query),
            route_params=resolution.params,
            body=body,
        )
        try:
            return _from_http_response(invoke(route.function, route.arg_name, request))
        except Exception:
            request_id = new_request_id()
            logger.exception("function %s failed (request_id=%s)", route.name, request_id)
            return json_error(500, error_body("INTERNAL", "internal error", request_id), request_id)


def _merge_headers(headers: list[tuple[str, str]]) -> dict[str, str]:
    merged: dict[str, str] = {}
    for name, value in headers:
        key = name.lower()
        merged[key] = f"{merged[key]}, {value}" if key in merged else value
    return merged


def _query_params(query: str) -> dict[str, str]:
    params: dict[str, str] = {}
    for name, value in parse_qsl(query, keep_blank_values=True):
        params[name] = f"{params[name]},{value}" if name in params else value
    return params


def _not_routed(resolution: Resolution, method: str, path: str) -> RawResponse:
    request_id = new_request_id()
    body = not_routed_body(resolution, method, path, request_id)
    response = json_error(resolution.status, body, request_id)
    if resolution.status == 405:
        response.headers.append(("Allow", ", ".join(resolution.allowed)))
    return response


def _from_http_response(response: object) -> RawResponse:
    if not isinstance(response, func.HttpResponse):
        raise TypeError(f"HTTP function returned {type(response).__name__}, not HttpResponse")
    headers = [(k, v) for k, v in response.headers.items() if k.lower() != "content-length"]
    if not any(k.lower() == "content-type" for k, _ in headers):
        headers.append(("Content-Type", _content_type(response.mimetype, response.charset)))
    return RawResponse(int(response.status_code), headers, response.get_body())


def _content_type(mimetype: str, charset: str) -> str:
    if mimetype.startswith("text/") or mimetype.endswith(_TEXTUAL_SUFFIXES):
        return f"{mimetype}; charset={charset}"
    return mimetype
