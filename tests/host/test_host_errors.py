"""Every answer of the host is JSON in the error shape with an x-request-id, including
unknown methods and the protocol errors BaseHTTPRequestHandler would answer in HTML."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from http import HTTPStatus

import pytest

from funchost import RunningServer, start_in_thread

from .raw_http import Reply, exchange
from .sample_app import app


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with start_in_thread(app, route_prefix="", run_timers=False) as running:
        yield running


def _ask(server: RunningServer, method: str, path: str) -> Reply:
    return exchange(server, f"{method} {path} HTTP/1.1\r\nConnection: close\r\n\r\n".encode())


@pytest.mark.parametrize("method", ["TRACE", "PROPFIND", "BREW"])
def test_unknown_method_on_a_route_is_405_with_allow(server: RunningServer, method: str) -> None:
    reply = _ask(server, method, "/v1/things/abc")
    assert reply.status == 405 and reply.headers["Allow"] == "GET, PUT"
    assert reply.error["code"] == "METHOD_NOT_ALLOWED"


@pytest.mark.parametrize("method", ["TRACE", "PROPFIND"])
def test_unknown_method_elsewhere_is_404(server: RunningServer, method: str) -> None:
    reply = _ask(server, method, "/nowhere")
    assert reply.status == 404 and reply.error["code"] == "ROUTE_NOT_FOUND"


PROTOCOL_ERRORS = {
    "one word": (b"GARBAGE\r\n\r\n", 400),
    "four words": (b"GET / HTTP/1.1 extra\r\n\r\n", 400),
    "bad version": (b"GET / HTTP/x.y\r\n\r\n", 400),
    "HTTP/2.0": (b"GET / HTTP/2.0\r\n\r\n", 505),
    "HTTP/0.9": (b"GET /v1/plain\r\n\r\n", 505),
    "invalid method": (b"G(T /v1/plain HTTP/1.1\r\n\r\n", 400),
    "URI too long": (b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\n\r\n", 414),
    "header line too long": (b"GET / HTTP/1.1\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n", 431),
    "too many headers": (b"GET / HTTP/1.1\r\n" + b"X-A: 1\r\n" * 101 + b"\r\n", 431),
}


@pytest.mark.parametrize(("raw", "status"), PROTOCOL_ERRORS.values(), ids=PROTOCOL_ERRORS.keys())
def test_protocol_errors_are_json_in_the_error_shape(
    server: RunningServer, raw: bytes, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger="funchost"):
        reply = exchange(server, raw)
    assert reply.status == status and reply.closed
    assert reply.error["code"] == HTTPStatus(status).name
    assert not any(record.exc_info for record in caplog.records)
