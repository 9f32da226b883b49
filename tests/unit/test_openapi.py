"""The OpenAPI document (memnet/api/openapi.py): served as committed, one operation per
function route and nothing else, valid OpenAPI 3.1 with valid JSON Schemas."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012
from schemathesis.specs.openapi.definitions import OPENAPI_31

import function_app
from funchost import functions_of
from memnet.api import openapi
from memnet.api.models.requests import HoldKind
from memnet.services.governance.holds import HOLD_KINDS
from tests.clients import DirectClient

COMMITTED = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"
DOCUMENT = openapi.document()
METHODS = ("get", "put", "post", "patch", "delete")


def operations() -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (path, method, item[method])
        for path, item in DOCUMENT["paths"].items()
        for method in METHODS
        if method in item
    ]


def test_the_served_document_is_the_committed_one():
    reply = DirectClient(None).request("GET", "/v1/openapi.json")
    assert reply.status == 200 and reply.headers["content-type"].startswith("application/json")
    assert reply.body.decode() == COMMITTED.read_text(encoding="utf-8"), (
        "regenerate: python -m memnet.api.openapi > docs/openapi.json"
    )


def test_every_http_function_is_an_operation_and_nothing_else():
    """The console's files (``console/{*path}``) are a web page, not an API operation."""
    routes = {
        (r.name, method, "/" + r.route.replace("{*", "{"))
        for r in functions_of(function_app.app).http_routes
        for method in r.methods
        if r.name != "get_console"
    }
    documented = {
        (op["x-function"], method.upper(), _function_path(path))
        for path, method, op in operations()
    }
    assert documented == routes


def _function_path(path: str) -> str:
    """The Functions route a documented path is served by: a document's ``:history``
    (and ``:diff``, ``:revert``, ...), a namespace's listing (the catch-all empty) and a
    user's ``:export`` are the document's and the user's routes."""
    path = re.sub(r"(\{path\}):[a-z]+$", r"\1", path)
    path = re.sub(r":export$", "", path)
    return path + "{path}" if path.endswith("/") else path


def test_history_and_colon_routes_are_their_own_paths():
    base = "/v1/tenants/{tenant_id}/users/{user_id}"
    document = base + "/documents/{namespace}/{path}"
    paths = DOCUMENT["paths"]
    assert paths[document + ":history"]["get"]["operationId"] == "get_document_history"
    assert paths[document + ":history"]["get"]["x-function"] == "get_document"
    assert paths[document + ":diff"]["get"]["operationId"] == "get_document_diff"
    assert set(paths[document]) == {"get", "patch", "put"}
    assert paths[document + ":revert"]["post"]["x-function"] == "post_document"
    listing = paths[base + "/documents/{namespace}/"]
    assert set(listing) == {"get"} and listing["get"]["operationId"] == "list_documents"
    assert listing["get"]["x-function"] == "get_document"
    assert paths[base + "/context:assemble"]["post"]["operationId"] == "assemble_context"
    assert paths[base + "/events:search"]["post"]["operationId"] == "search_events"


def test_the_document_is_valid_openapi_3_1():
    errors = [e.message for e in Draft202012Validator(OPENAPI_31).iter_errors(DOCUMENT)]
    assert errors == []


@pytest.mark.parametrize("name", sorted(DOCUMENT["components"]["schemas"]))
def test_each_schema_is_valid_json_schema_2020_12(name: str):
    Draft202012Validator.check_schema(DOCUMENT["components"]["schemas"][name])


def test_every_ref_resolves():
    resolver = (
        Registry()
        .with_resource(
            "urn:openapi", Resource.from_contents(DOCUMENT, default_specification=DRAFT202012)
        )
        .resolver("urn:openapi")
    )
    refs = list(_refs(DOCUMENT))
    assert refs
    for ref in refs:
        assert resolver.lookup(ref).contents, ref


def _refs(node: Any) -> Any:
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node["$ref"]
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def test_path_parameters_match_each_template():
    for path, _, op in operations():
        names = {p["name"] for p in op["parameters"] if p["in"] == "path"}
        assert names == set(re.findall(r"\{(\w+)\}", path)), path


def test_links_name_operations_and_their_parameters():
    by_id = {op["operationId"]: op for _, _, op in operations()}
    assert len(by_id) == len(operations())
    found = 0
    for _, _, op in operations():
        for response in op["responses"].values():
            for link in response.get("links", {}).values():
                target = by_id[link["operationId"]]
                names = {p["name"] for p in target["parameters"]}
                assert set(link["parameters"]) <= names
                found += 1
    assert found >= 6  # PUT/PATCH -> GET and history, GET -> history, POST event -> GET


def test_only_health_and_this_document_need_no_credentials():
    open_ = {op["operationId"] for _, _, op in operations() if op["security"] == []}
    assert open_ == {"get_health", "get_openapi"}


def test_every_error_response_has_the_error_shape():
    for _, _, op in operations():
        for status, response in op["responses"].items():
            if status == "default" or int(status) >= 400:
                schema = response["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/ErrorResponse"}


def test_hold_kinds_are_the_services():
    assert HoldKind.__args__ == HOLD_KINDS


def test_the_committed_document_is_pretty_and_sorted():
    text = COMMITTED.read_text(encoding="utf-8")
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
