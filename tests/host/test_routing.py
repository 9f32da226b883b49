"""Route template matching: segments, precedence, decoding, 404 vs 405."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from funchost.index import HttpRoute
from funchost.routing import (
    Resolution,
    Router,
    SegmentKind,
    not_routed_body,
    parse_template,
    read_route_prefix,
)


def _route(name: str, template: str, *methods: str) -> HttpRoute:
    return HttpRoute(name, lambda req: None, template, methods or ("GET",), "req")


def _match(template: str, path: str) -> dict[str, str] | None:
    """The route values a router with this one template finds for ``path``, or None."""
    resolution = Router([_route("only", template)], prefix="").resolve("GET", path)
    return None if resolution.route is None else dict(resolution.params)


ROUTES = [
    _route("thing", "v1/things/{thing_id}", "GET", "PUT"),
    _route("special", "v1/things/special", "GET"),
    _route("doc", "v1/tenants/{tenant_id}/docs/{namespace}/{*path}", "GET", "PATCH"),
    _route("assemble", "v1/tenants/{tenant_id}/context:assemble", "POST"),
    _route("any_tenant_thing", "v1/tenants/{tenant_id}/{what}", "POST"),
    _route("rest", "v1/{*rest}", "GET"),
]


def test_parse_template_kinds() -> None:
    kinds = [s.kind for s in parse_template("v1/{a}/x:y/{*rest}")]
    assert kinds == [
        SegmentKind.LITERAL,
        SegmentKind.PARAMETER,
        SegmentKind.LITERAL,
        SegmentKind.CATCH_ALL,
    ]


def test_catch_all_must_be_last() -> None:
    with pytest.raises(ValueError):
        parse_template("v1/{*rest}/x")


def test_parameter_matches_exactly_one_non_empty_segment() -> None:
    assert _match("v1/things/{id}", "/v1/things/abc") == {"id": "abc"}
    assert _match("v1/things/{id}", "/v1/things") is None
    assert _match("v1/things/{id}", "/v1/things/a/b") is None
    assert _match("v1/{a}/{b}", "/v1//b") is None


def test_literals_are_case_insensitive() -> None:
    assert _match("v1/Things/{id}", "/V1/things/X") == {"id": "X"}


def test_literal_with_colon() -> None:
    template = "v1/tenants/{t}/context:assemble"
    assert _match(template, "/v1/tenants/t1/context:assemble") == {"t": "t1"}
    assert _match(template, "/v1/tenants/t1/context%3Aassemble") == {"t": "t1"}
    assert _match(template, "/v1/tenants/t1/context") is None


def test_catch_all_takes_the_rest_of_the_path() -> None:
    template = "docs/{ns}/{*path}"
    assert _match(template, "/docs/n/a/b/c.json") == {"ns": "n", "path": "a/b/c.json"}
    assert _match(template, "/docs/n/c.json") == {"ns": "n", "path": "c.json"}


def test_catch_all_matches_the_empty_string_as_in_asp_net_core() -> None:
    # ASP.NET Core routing: "Catch-all parameters can also match the empty string."
    # A trailing slash is insignificant there, so both spellings reach the route.
    template = "docs/{ns}/{*path}"
    assert _match(template, "/docs/n/") == {"ns": "n", "path": ""}
    assert _match(template, "/docs/n") == {"ns": "n", "path": ""}
    assert _match(template, "/docs") is None
    assert _match(template, "/docs//") is None  # the parameter before it still needs a value


def test_an_empty_catch_all_keeps_literal_and_parameter_routes_first() -> None:
    router = Router(ROUTES, "")
    assert router.resolve("GET", "/v1/things/special").route == ROUTES[1]
    empty = router.resolve("GET", "/v1/tenants/t1/docs/ns/")
    assert empty.route is not None and empty.route.name == "doc"
    assert empty.params == {"tenant_id": "t1", "namespace": "ns", "path": ""}
    fallback = router.resolve("GET", "/v1")
    assert fallback.route is not None and fallback.params == {"rest": ""}


def test_catch_all_decodes_joined_remainder_once() -> None:
    template = "docs/{ns}/{*path}"
    assert _match(template, "/docs/n/a%2Fb/c%20d.json") == {"ns": "n", "path": "a/b/c d.json"}
    assert _match(template, "/docs/n/a%252Fb.json") == {"ns": "n", "path": "a%2Fb.json"}


def test_parameter_decoded_once() -> None:
    assert _match("x/{id}", "/x/a%20b%2541") == {"id": "a b%41"}


def test_query_string_ignored() -> None:
    assert _match("x/{id}", "/x/1?a=b/c") == {"id": "1"}


def test_literal_beats_parameter() -> None:
    router = Router(ROUTES, "")
    assert router.resolve("GET", "/v1/things/special").route == ROUTES[1]
    assert router.resolve("GET", "/v1/things/other").route == ROUTES[0]


def test_literal_colon_route_beats_parameter_route() -> None:
    resolution = Router(ROUTES, "").resolve("POST", "/v1/tenants/t1/context:assemble")
    assert resolution.route is not None and resolution.route.name == "assemble"
    assert resolution.params == {"tenant_id": "t1"}


def test_parameter_beats_catch_all() -> None:
    resolution = Router(ROUTES, "").resolve("GET", "/v1/things/abc")
    assert resolution.route is not None and resolution.route.name == "thing"
    fallback = Router(ROUTES, "").resolve("GET", "/v1/anything/else")
    assert fallback.route is not None and fallback.params == {"rest": "anything/else"}


def test_method_filters_before_precedence() -> None:
    # PUT is not allowed on the literal route, so the parameter route serves it.
    resolution = Router(ROUTES, "").resolve("PUT", "/v1/things/special")
    assert resolution.route is not None and resolution.route.name == "thing"


def test_not_found_vs_method_not_allowed() -> None:
    router = Router(ROUTES[:4], "")
    assert router.resolve("GET", "/v2/nothing").status == 404
    wrong_method = router.resolve("DELETE", "/v1/things/abc")
    assert wrong_method.status == 405
    assert wrong_method.allowed == ("GET", "PUT")


def test_route_prefix_applied() -> None:
    router = Router(ROUTES[:1], "api")
    assert router.resolve("GET", "/api/v1/things/a").params == {"thing_id": "a"}
    assert router.resolve("GET", "/v1/things/a").status == 404


def test_read_route_prefix(tmp_path: Path) -> None:
    assert read_route_prefix(tmp_path / "missing.json") == "api"
    host_json = tmp_path / "host.json"
    host_json.write_text(json.dumps({"version": "2.0"}))
    assert read_route_prefix(host_json) == "api"
    host_json.write_text(json.dumps({"extensions": {"http": {"routePrefix": ""}}}))
    assert read_route_prefix(host_json) == ""
    host_json.write_text("{not json")
    with pytest.raises(ValueError, match=r"host\.json"):
        read_route_prefix(host_json)


def test_error_bodies_have_the_error_shape() -> None:
    body = json.loads(not_routed_body(Resolution(), "GET", "/x", "req_1"))
    assert body == {
        "error": {
            "code": "ROUTE_NOT_FOUND",
            "message": body["error"]["message"],
            "request_id": "req_1",
            "details": {},
        }
    }
    body = json.loads(not_routed_body(Resolution(allowed=("GET",)), "PUT", "/x", "req_2"))
    assert body["error"]["code"] == "METHOD_NOT_ALLOWED"
