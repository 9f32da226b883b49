"""Real HTTP round trips through the local host."""

from __future__ import annotations

import http.client
import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

import pytest

from funchost import RunningServer, start_in_thread

from .sample_app import app


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    running = start_in_thread(app, route_prefix="", run_timers=False)
    yield running
    running.stop()


def _connect(server: RunningServer) -> http.client.HTTPConnection:
    return http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)


def _request(
    server: RunningServer,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, http.client.HTTPMessage, bytes]:
    connection = _connect(server)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, response.headers, response.read()
    finally:
        connection.close()


def test_url_and_port(server: RunningServer) -> None:
    assert server.port > 0
    assert urlsplit(server.url).port == server.port


def test_round_trip_headers_query_and_body(server: RunningServer) -> None:
    status, headers, raw = _request(
        server, "PUT", "/v1/things/t%201?a=1&b=two", body=b"payload", headers={"X-Echo": "hi"}
    )
    assert status == 200
    assert headers["x-custom"] == "yes"
    assert headers["Content-Type"] == "application/json; charset=utf-8"
    assert int(headers["Content-Length"]) == len(raw)
    payload = json.loads(raw)
    assert payload["thing_id"] == "t 1"
    assert payload["method"] == "PUT"
    assert payload["params"] == {"a": "1", "b": "two"}
    assert payload["echo_header"] == "hi"
    assert payload["body"] == "payload"
    assert payload["url"] == f"http://127.0.0.1:{server.port}/v1/things/t%201?a=1&b=two"


def test_catch_all_keeps_an_encoded_slash_as_kestrel_does(server: RunningServer) -> None:
    status, _, raw = _request(server, "GET", "/v1/tenants/t1/docs/ns/a%2Fb/c%2Ed.json")
    assert status == 200
    assert json.loads(raw) == {"tenant_id": "t1", "namespace": "ns", "path": "a%2Fb/c.d.json"}


def test_literal_route_with_colon_and_status(server: RunningServer) -> None:
    body = json.dumps({"q": "x"}).encode()
    status, _, raw = _request(
        server,
        "POST",
        "/v1/tenants/t9/context:assemble",
        body=body,
        headers={"Content-Type": "application/json"},
    )
    assert status == 201
    assert json.loads(raw) == {"tenant_id": "t9", "got": {"q": "x"}}


def test_literal_preferred_over_parameter(server: RunningServer) -> None:
    status, _, raw = _request(server, "GET", "/v1/things/special")
    assert status == 200 and json.loads(raw) == {"special": True}


def test_404_is_json_error(server: RunningServer) -> None:
    status, headers, raw = _request(server, "GET", "/v2/unknown")
    assert status == 404
    error = json.loads(raw)["error"]
    assert error["code"] == "ROUTE_NOT_FOUND"
    assert error["request_id"].startswith("req_") and error["details"] == {}
    assert headers["x-request-id"] == error["request_id"]


def test_405_has_allow_header(server: RunningServer) -> None:
    status, headers, raw = _request(server, "DELETE", "/v1/things/abc")
    assert status == 405
    assert headers["Allow"] == "GET, PUT"
    assert json.loads(raw)["error"]["code"] == "METHOD_NOT_ALLOWED"


def test_exception_becomes_500_without_traceback(
    server: RunningServer, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="funchost"):
        status, _, raw = _request(server, "GET", "/v1/boom")
    assert status == 500
    text = raw.decode()
    assert "Traceback" not in text and "secret internal detail" not in text
    error = json.loads(text)["error"]
    assert error["code"] == "INTERNAL" and error["request_id"].startswith("req_")
    assert any(error["request_id"] in r.getMessage() for r in caplog.records)


def test_async_function_and_plain_text(server: RunningServer) -> None:
    status, headers, raw = _request(server, "GET", "/v1/plain")
    assert (status, raw) == (200, b"hello")
    assert headers["Content-Type"] == "text/plain; charset=utf-8"


def test_head_has_no_body(server: RunningServer) -> None:
    connection = _connect(server)
    try:
        connection.request("HEAD", "/v1/plain")
        response = connection.getresponse()
        assert response.status == 200 and response.read() == b""
        assert response.headers["Content-Length"] == "5"
    finally:
        connection.close()


def test_keep_alive_two_requests_one_connection(server: RunningServer) -> None:
    connection = _connect(server)
    try:
        connection.request("GET", "/v1/things/one")
        first = connection.getresponse()
        assert json.loads(first.read())["thing_id"] == "one"
        sock = connection.sock
        connection.request("PUT", "/v1/things/two", body=b"x" * 10_000)
        second = connection.getresponse()
        assert json.loads(second.read())["body"] == "x" * 10_000
        assert connection.sock is sock  # the same socket carried both requests
    finally:
        connection.close()


def test_chunked_request_body(server: RunningServer) -> None:
    connection = _connect(server)
    try:
        connection.request("PUT", "/v1/things/c", body=iter([b"ab", b"cd"]), encode_chunked=True)
        assert json.loads(connection.getresponse().read())["body"] == "abcd"
    finally:
        connection.close()


def test_32_concurrent_requests(server: RunningServer) -> None:
    def fetch(i: int) -> tuple[int, str]:
        status, _, raw = _request(server, "GET", f"/v1/things/n{i}")
        return status, json.loads(raw)["thing_id"]

    with ThreadPoolExecutor(max_workers=32) as pool:
        results = list(pool.map(fetch, range(32)))
    assert results == [(200, f"n{i}") for i in range(32)]


def test_request_is_logged(server: RunningServer, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="funchost"):
        _request(server, "GET", "/v1/things/logme")
    assert any(
        "/v1/things/logme 200" in r.getMessage() and "req_thing" in r.getMessage()
        for r in caplog.records
    )


def test_invocation_threads_follow_the_python_worker_setting() -> None:
    from funchost.settings import invocation_threads

    assert invocation_threads({}) == min(32, (os.cpu_count() or 1) + 4)
    assert invocation_threads({"PYTHON_THREADPOOL_THREAD_COUNT": "3"}) == 3
    for bad in ("0", "-1", "many"):
        with pytest.raises(ValueError, match="PYTHON_THREADPOOL_THREAD_COUNT"):
            invocation_threads({"PYTHON_THREADPOOL_THREAD_COUNT": bad})


def test_at_most_the_pool_size_of_invocations_run_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import azure.functions as func

    busy, peak, lock = [0], [0], threading.Lock()
    slow = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

    @slow.route(route="v1/slow", methods=["GET"])
    def slow_call(req: func.HttpRequest) -> func.HttpResponse:
        with lock:
            busy[0] += 1
            peak[0] = max(peak[0], busy[0])
        time.sleep(0.05)
        with lock:
            busy[0] -= 1
        return func.HttpResponse("ok")

    monkeypatch.setenv("PYTHON_THREADPOOL_THREAD_COUNT", "2")
    running = start_in_thread(slow, route_prefix="", run_timers=False)
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            statuses = list(pool.map(lambda _: _request(running, "GET", "/v1/slow")[0], range(8)))
    finally:
        running.stop()
    assert statuses == [200] * 8 and peak[0] == 2
