"""Slow, idle and numerous clients, tried through real sockets: each request is read by
its deadline (408), idle connections close, connections beyond the limit get 503."""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Iterator

import azure.functions as func
import pytest

from funchost import HostLimits, RunningServer, start_in_thread

from .raw_http import connect, exchange, read_reply, thing_id
from .sample_app import app

PUT = b"PUT /v1/things/x HTTP/1.1\r\nHost: test\r\n"


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    limits = HostLimits(read_timeout_seconds=0.5, idle_timeout_seconds=0.5)
    with start_in_thread(app, route_prefix="", run_timers=False, limits=limits) as running:
        yield running


def test_idle_connection_is_closed_after_the_idle_timeout(server: RunningServer) -> None:
    started = time.monotonic()
    with connect(server) as sock:
        assert sock.recv(1) == b""  # closed by the host, no answer (no request was made)
    assert 0.4 < time.monotonic() - started < 2


def _trickle(sock: socket.socket, data: bytes, interval: float = 0.05) -> float:
    """Send `data` a byte at a time until the host answers; the seconds that took."""
    started = time.monotonic()
    for byte in data:
        sock.sendall(bytes([byte]))
        if select.select([sock], [], [], interval)[0]:
            break
    return time.monotonic() - started


SLOW = {
    "request line": (b"", b"GET /v1/things/" + b"a" * 200 + b" HTTP/1.1\r\n\r\n"),
    "headers": (b"GET /v1/things/x HTTP/1.1\r\n", b"X-Slow: " + b"a" * 200 + b"\r\n\r\n"),
    "body": (PUT + b"Content-Length: 900\r\n\r\n", b"b" * 900),
}


@pytest.mark.parametrize(("sent_at_once", "trickled"), SLOW.values(), ids=SLOW.keys())
def test_a_slow_client_is_cut_off_at_the_read_deadline(
    server: RunningServer, sent_at_once: bytes, trickled: bytes
) -> None:
    with connect(server) as sock:
        sock.sendall(sent_at_once)
        elapsed = _trickle(sock, trickled)  # 10 s at this pace, if the host waited for it
        answer = read_reply(sock)
    assert elapsed < 2  # the 0.5 s read deadline, not the 0.5 s between reads
    assert answer.status == 408 and answer.closed
    assert answer.error["code"] == "REQUEST_TIMEOUT"


def test_the_read_deadline_is_per_request_not_per_connection(server: RunningServer) -> None:
    with connect(server) as sock:
        things = []
        for thing in ("one", "two", "three"):  # 0.6 s in all, past one 0.5 s deadline
            sock.sendall(b"GET /v1/things/%s HTTP/1.1\r\nHost: test\r\n\r\n" % thing.encode())
            things.append(thing_id(sock))
            time.sleep(0.2)
    assert things == ["one", "two", "three"]


def test_a_slow_function_is_not_cut_off_by_the_read_deadline() -> None:
    slow = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

    @slow.route(route="v1/slow", methods=["POST"])
    def slow_call(req: func.HttpRequest) -> func.HttpResponse:
        time.sleep(0.4)
        return func.HttpResponse(req.get_body())

    limits = HostLimits(read_timeout_seconds=0.2)
    with start_in_thread(slow, route_prefix="", run_timers=False, limits=limits) as running:
        reply = exchange(
            running, b"POST /v1/slow HTTP/1.1\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"
        )
    assert (reply.status, reply.body) == (200, b"ok")


def test_connections_beyond_the_limit_get_503_until_one_closes() -> None:
    limits = HostLimits(max_connections=2, idle_timeout_seconds=5)
    with start_in_thread(app, route_prefix="", run_timers=False, limits=limits) as running:
        idle = [connect(running), connect(running)]
        with connect(running) as third:  # answered at once, before it sends anything
            refused = read_reply(third)
        idle.pop().close()
        status = _status_when_a_slot_frees(running)
        idle.pop().close()
    assert refused.status == 503 and refused.closed
    assert refused.error["code"] == "TOO_MANY_CONNECTIONS"
    assert refused.error["details"] == {"limit": 2}
    assert refused.headers["Retry-After"] == "1"
    assert status == 200


def _status_when_a_slot_frees(running: RunningServer) -> int:
    for _ in range(40):
        reply = exchange(running, b"GET /v1/things/x HTTP/1.1\r\nConnection: close\r\n\r\n")
        if reply.status != 503:
            return reply.status
        time.sleep(0.05)
    return 503


def test_pipelined_requests_in_one_segment_are_both_answered(server: RunningServer) -> None:
    with connect(server) as sock:
        sock.sendall(
            b"GET /v1/things/one HTTP/1.1\r\nHost: test\r\n\r\n"
            b"PUT /v1/things/two HTTP/1.1\r\nHost: test\r\nConnection: close\r\n"
            b"Content-Length: 2\r\n\r\nhi"
        )
        received = b"".join(iter(lambda: sock.recv(65536), b""))
    assert received.count(b"HTTP/1.1 200 OK") == 2
    assert 0 < received.index(b'"thing_id": "one"') < received.index(b'"thing_id": "two"')
