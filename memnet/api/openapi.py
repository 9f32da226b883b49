"""The OpenAPI 3.1 document of the HTTP API, built from the route table
(:mod:`memnet.api.models.routes`) and the pydantic models; served unauthenticated at
``GET /v1/openapi.json`` and committed as ``docs/openapi.json``
(regenerate: ``python -m memnet.api.openapi > docs/openapi.json``).

Built on the first request, not at import, and kept: about 0.1 s of schema generation.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from memnet.api.endpoint import ServicesSource, public
from memnet.api.http import ApiRequest, ApiResponse
from memnet.api.models import responses as rs
from memnet.api.models.parameters import (
    SECURITY_SCHEMES,
    STATUS_TEXT,
    header_parameter,
    links,
    path_parameters,
    query_parameter,
    response_header,
)
from memnet.api.models.routes import ROUTES, Route

TITLE = "mem.net API"
VERSION = "1.0.0"
REF = "#/components/schemas/{model}"
JSON_MEDIA = "application/json"
SECURITY: list[dict[str, list[str]]] = [{"apiKey": []}, {"entra": []}]
Refs = dict[tuple[str, str], str]
"""A model's ``$ref`` by its name and mode (validation: a request, serialization: a
response)."""


@public
def get_openapi(request: ApiRequest, services: ServicesSource) -> ApiResponse:
    return ApiResponse.encoded(200, serialised().encode())


@functools.cache
def serialised() -> str:
    """The document as committed: pretty-printed, keys sorted, a final newline."""
    return json.dumps(document(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def document() -> dict[str, Any]:
    schemas, refs = _schemas()
    paths: dict[str, dict[str, Any]] = {}
    for route in ROUTES:
        paths.setdefault(openapi_path(route), {})[route.method.lower()] = _operation(route, refs)
    return {
        "openapi": "3.1.0",
        "info": {"title": TITLE, "version": VERSION, "description": _DESCRIPTION},
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "paths": paths,
        "components": {"schemas": schemas, "securitySchemes": SECURITY_SCHEMES},
    }


def openapi_path(route: Route) -> str:
    """``/`` + the Functions route, its catch-all ``{*path}`` as ``{path}`` (or, for a
    collection, left out: the path ends in the ``/`` before it)."""
    if route.collection:
        return "/" + route.route.rpartition("{*")[0]
    return "/" + route.route.replace("{*", "{") + route.suffix


def operation_id(route: Route) -> str:
    return route.operation or route.name + route.suffix.replace(":", "_")


def _schemas() -> tuple[dict[str, Any], Refs]:
    """Every model's JSON Schema under components; requests in validation mode,
    responses in serialisation mode (a model used both ways may get two entries)."""
    wanted: list[tuple[type[BaseModel], Any]] = [(rs.ErrorResponse, "serialization")]
    for route in ROUTES:
        if route.request is not None:
            wanted.append((route.request, "validation"))
        if route.response is not None:
            wanted.append((route.response, "serialization"))
    keys, found = models_json_schema(list(dict.fromkeys(wanted)), ref_template=REF)
    refs: Refs = {(model.__name__, mode): value["$ref"] for (model, mode), value in keys.items()}
    schemas: dict[str, Any] = found.get("$defs", {})
    return schemas, refs


def _operation(route: Route, refs: Refs) -> dict[str, Any]:
    operation: dict[str, Any] = {
        "operationId": operation_id(route),
        "summary": route.summary,
        "tags": list(route.tags),
        "x-function": route.name,
        "parameters": _parameters(route),
        "responses": _responses(route, refs),
        "security": SECURITY if route.authenticated else [],
    }
    if route.request is not None:
        schema = {"$ref": refs[(route.request.__name__, "validation")]}
        operation["requestBody"] = {"required": True, "content": {JSON_MEDIA: {"schema": schema}}}
    return operation


def _parameters(route: Route) -> list[dict[str, Any]]:
    return [
        *path_parameters(openapi_path(route)),
        *(query_parameter(name) for name in route.query),
        *(header_parameter(name, route.headers) for name in route.headers),
    ]


def _responses(route: Route, refs: Refs) -> dict[str, dict[str, Any]]:
    responses = {str(status): _success(route, status, refs) for status in route.statuses}
    error = {"$ref": refs[("ErrorResponse", "serialization")]}
    for status in _error_statuses(route):
        responses[str(status)] = _error(status, error)
    responses["default"] = _error(0, error)
    return responses


_FILE_TYPES = {JSON_MEDIA: "object"}  # a JSON file is one object; any other, its text


def _success(route: Route, status: int, refs: Refs) -> dict[str, Any]:
    model = route.response
    schema = {"$ref": refs[(model.__name__, "serialization")]} if model else {"type": "object"}
    headers = {name: response_header(name) for name in ("x-request-id", *route.response_headers)}
    content = {JSON_MEDIA: {"schema": schema}}
    if route.media:  # a file: its bytes as served
        content = {m: {"schema": {"type": _FILE_TYPES.get(m, "string")}} for m in route.media}
    answer: dict[str, Any] = {
        "description": STATUS_TEXT[status],
        "headers": headers,
        "content": content,
    }
    found = links(route)
    if found:
        answer["links"] = found
    return answer


def _error_statuses(route: Route) -> list[int]:
    base = (400, 401, 403, 429, 500, 503) if route.authenticated else (500, 503)
    return sorted({*base, *route.errors})


def _error(status: int, schema: dict[str, Any]) -> dict[str, Any]:
    headers = {"x-request-id": response_header("x-request-id")}
    if status == 401:
        headers["WWW-Authenticate"] = response_header("WWW-Authenticate")
    if status in (409, 429, 503):
        headers["Retry-After"] = response_header("Retry-After")
    return {
        "description": STATUS_TEXT.get(status, "Any other error, in the same shape."),
        "headers": headers,
        "content": {JSON_MEDIA: {"schema": schema}},
    }


_DESCRIPTION = (
    "Memory for AI agents (docs/api.md). Every error is "
    '{"error": {"code", "message", "request_id", "details"}} (spec 10.7); '
    "details.location names where a request was wrong: a list whose first element is "
    '"body", "path", "query" or "header", then member names and array indexes '
    '(["body", "ops", 0], ["path", "user_id"]). Request bodies are JSON in UTF-8 '
    "(else 415), strict (no duplicate member names, NaN or Infinity; nesting at most 64 "
    "levels)."
)


if __name__ == "__main__":
    print(serialised(), end="")
