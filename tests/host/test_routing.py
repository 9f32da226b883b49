"""Route template matching: segments, precedence, decoding, 404 vs 405; and, through the
host and the app, the request targets that routing would forgive (docs/decisions.md,
"funchost and Azure routing")."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from funchost import RunningServer, start_in_thread
from funchost.index import HttpRoute
from funchost.route_templates import (
    Resolution,
    Router,
    SegmentKind,
    not_routed_body,
    parse_template,
    read_route_prefix,
)
from tests.conftest import AGENT_KEY
from tests.host import raw_http


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


def test_catch_all_decodes_joined_remainder_once_but_never_a_slash() -> None:
    # Kestrel decodes a path before routing except %2F, which stays as sent: a decoded
    # slash would make a%2Fb.json the document b.json in folder a, which it is not.
    template = "docs/{ns}/{*path}"
    assert _match(template, "/docs/n/a%2Fb/c%20d.json") == {"ns": "n", "path": "a%2Fb/c d.json"}
    assert _match(template, "/docs/n/a%2fb.json") == {"ns": "n", "path": "a%2fb.json"}
    assert _match(template, "/docs/n/a%252Fb.json") == {"ns": "n", "path": "a%2Fb.json"}


def test_parameter_decoded_once() -> None:
    assert _match("x/{id}", "/x/a%20b%2541") == {"id": "a b%41"}
    assert _match("x/{id}", "/x/a%2Fb") == {"id": "a%2Fb"}
    assert _match("x/{id}/y", "/x/a%2Fb/y") == {"id": "a%2Fb"}  # one segment, not two


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


# --- The app behind the host: one spelling per resource (docs/api.md, "Request targets
# and encodings"; docs/decisions.md, "funchost and Azure routing"). Each spelling a host's
# routing would forgive is refused by the app, so funchost and Azure answer alike, and
# nothing is written under a name the client did not send.

DOCS = "/v1/tenants/t1/users/u1/documents"
CREATE = {"If-None-Match": "*", "Idempotency-Key": "k-1"}
OPS = {"ops": [{"op": "replace", "path": "/content/summary", "value": "s"}]}


@pytest.fixture(scope="module")
def app_server() -> Iterator[RunningServer]:
    import function_app

    with start_in_thread(function_app.app, route_prefix="", run_timers=False) as running:
        yield running


@pytest.fixture
def memnet(app_server: RunningServer, tmp_path: Path) -> Iterator[RunningServer]:
    from memnet import bootstrap
    from tests.conftest import make_settings

    bootstrap.install(bootstrap.build(make_settings(tmp_path / "data")))
    yield app_server
    bootstrap.install(None)


def _send(
    server: RunningServer, method: str, target: str, body: Any = None, **headers: str
) -> raw_http.Reply:
    """``target`` exactly as given on the request line, with the agent's key."""
    payload = body if isinstance(body, bytes) else json.dumps(body).encode() if body else b""
    sent = {
        "Host": f"127.0.0.1:{server.port}",
        "Authorization": f"Bearer {AGENT_KEY}",
        "Content-Type": "application/json",
        "Content-Length": str(len(payload)),
        "Connection": "close",
        **headers,
    }
    head = f"{method} {target} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in sent.items())
    return raw_http.exchange(server, head.encode() + b"\r\n" + payload)


def _stored(server: RunningServer) -> list[str]:
    """The paths of the namespace's documents (the listing)."""
    reply = _send(server, "GET", f"{DOCS}/projects/")
    assert reply.status == 200, reply.body
    return [d["path"] for d in json.loads(reply.body)["documents"]]


@pytest.mark.parametrize(
    ("target", "status", "code"),
    [
        (f"{DOCS}/projects/x.json/", 400, "INVALID_PATH"),  # a trailing slash
        (f"{DOCS}/projects/x.json//", 400, "INVALID_PATH"),
        (f"{DOCS}/projects//x.json", 400, "INVALID_PATH"),  # an empty segment
        (f"/{DOCS}/projects/x.json", 400, "INVALID_PATH"),  # a leading '//'
        (f"{DOCS[1:]}/projects/x.json", 400, "BAD_REQUEST"),  # no leading '/'
        (f"http://127.0.0.1{DOCS}/projects/x.json/", 400, "INVALID_PATH"),  # absolute-form
        ("*", 400, "BAD_REQUEST"),  # asterisk-form: for OPTIONS to a proxy, not a route
        (f"{DOCS}/projects/a%2Fx.json", 400, "INVALID_PATH"),  # %2F is not a '/'
        (f"{DOCS}/projects/x.json:history/", 400, "INVALID_PATH"),
    ],
)
def test_a_target_routing_would_forgive_is_refused_and_writes_nothing(
    memnet: RunningServer, target: str, status: int, code: str
) -> None:
    reply = _send(memnet, "PATCH", target, OPS, **CREATE)
    assert (reply.status, reply.error["code"]) == (status, code)
    assert _stored(memnet) == []
    read = _send(memnet, "GET", target)
    assert read.status in (400, 404), read.body  # never the document under another name


def test_a_read_with_a_trailing_slash_is_refused_not_served(memnet: RunningServer) -> None:
    assert _send(memnet, "PATCH", f"{DOCS}/projects/x.json", OPS, **CREATE).status == 201
    for target in (f"{DOCS}/projects/x.json/", f"{DOCS}/projects/x.json:history/"):
        reply = _send(memnet, "GET", target)
        assert (reply.status, reply.error["code"]) == (400, "INVALID_PATH")
        assert reply.error["details"]["location"] == ["path"]


def test_equivalent_spellings_name_one_resource_as_on_azure(memnet: RunningServer) -> None:
    """Literal segments are case-insensitive (ASP.NET Core), identifiers are not, and an
    escaped unreserved character is the character (RFC 3986 6.2.2.2)."""
    assert _send(memnet, "PATCH", f"{DOCS}/projects/x.json", OPS, **CREATE).status == 201
    same = [
        "/V1/TENANTS/t1/Users/u1/Documents/projects/x.json",
        f"{DOCS}/projects/x%2Ejson",
        f"http://127.0.0.1{DOCS}/projects/x.json",  # absolute-form (RFC 9112 3.2.2)
    ]
    for target in same:
        assert _send(memnet, "GET", target).status == 200, target
    other = _send(memnet, "GET", "/v1/tenants/T1/users/u1/documents/projects/x.json")
    assert other.error["code"] == "DOCUMENT_NOT_FOUND"  # tenant T1 is another tenant


def test_a_namespace_listing_is_the_one_address_that_ends_in_a_slash(
    memnet: RunningServer,
) -> None:
    for target in (f"{DOCS}/projects/", f"{DOCS}/projects"):
        assert _send(memnet, "GET", target).status == 200, target
    assert _send(memnet, "GET", f"{DOCS}/projects//").error["code"] == "INVALID_PATH"


@pytest.mark.parametrize(
    ("headers", "status", "code"),
    [
        ({"Content-Encoding": "gzip"}, 415, "UNSUPPORTED_MEDIA_TYPE"),
        ({"Content-Encoding": "br"}, 415, "UNSUPPORTED_MEDIA_TYPE"),
        ({"Content-Type": "application/json; charset=utf-16"}, 415, "UNSUPPORTED_MEDIA_TYPE"),
        ({"Content-Type": "application/json; charset=iso-8859-1"}, 415, "UNSUPPORTED_MEDIA_TYPE"),
        ({"Transfer-Encoding": "gzip, chunked"}, 400, "BAD_REQUEST"),
    ],
)
def test_a_header_that_changes_what_the_body_means_is_refused(
    memnet: RunningServer, headers: dict[str, str], status: int, code: str
) -> None:
    body = gzip.compress(json.dumps(OPS).encode()) if "Content-Encoding" in headers else OPS
    reply = _send(memnet, "PATCH", f"{DOCS}/projects/x.json", body, **CREATE, **headers)
    assert (reply.status, reply.error["code"]) == (status, code)
    if status == 415:
        assert reply.headers["Accept-Encoding"] == "identity"
    assert _stored(memnet) == []


def test_an_identity_content_encoding_is_the_body_as_sent(memnet: RunningServer) -> None:
    headers = {**CREATE, "Content-Encoding": "identity"}
    assert _send(memnet, "PATCH", f"{DOCS}/projects/x.json", OPS, **headers).status == 201
