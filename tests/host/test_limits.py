"""Request bodies, tried through real sockets: refused from their declared size before they
are read (413 in the app's error shape), malformed framing (400), the limit's settings."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import funchost
from funchost import HostLimits, RunningServer, start_in_thread

from .raw_http import connect, exchange, read_reply
from .sample_app import app

LIMIT = 1000
PUT = b"PUT /v1/things/x HTTP/1.1\r\nHost: test\r\n"
# The same with "Connection: close": a reply that ends the connection is read at once.
PUT_ONCE = PUT + b"Connection: close\r\n"
CHUNKED = PUT + b"Transfer-Encoding: chunked\r\n\r\n"


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    limits = HostLimits(max_body_bytes=LIMIT)
    with start_in_thread(app, route_prefix="", run_timers=False, limits=limits) as running:
        yield running


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def test_a_body_at_the_limit_is_read(server: RunningServer) -> None:
    reply = exchange(server, PUT_ONCE + b"Content-Length: %d\r\n\r\n" % LIMIT + b"x" * LIMIT)
    assert reply.status == 200 and json.loads(reply.body)["body"] == "x" * LIMIT
    body = _chunk(b"y" * 600) + _chunk(b"y" * 400) + b"0\r\n\r\n"
    chunked = exchange(server, PUT_ONCE + b"Transfer-Encoding: chunked\r\n\r\n" + body)
    assert chunked.status == 200 and json.loads(chunked.body)["body"] == "y" * LIMIT


def test_declared_300_mb_is_refused_at_once_without_reading_the_body(
    server: RunningServer,
) -> None:
    started = time.monotonic()
    reply = exchange(server, PUT + b"Content-Length: 300000000\r\n\r\nonly a few bytes")
    assert time.monotonic() - started < 1  # it did not wait for 300 MB
    assert reply.status == 413 and reply.closed
    error = reply.error
    assert error["code"] == "PAYLOAD_TOO_LARGE"  # as memnet.domain.errors.PayloadTooLarge
    assert error["details"] == {"limit": LIMIT}


def test_expect_100_continue_over_the_limit_gets_413_instead_of_100(
    server: RunningServer,
) -> None:
    head = PUT + b"Content-Length: 300000000\r\nExpect: 100-continue\r\n\r\n"
    reply = exchange(server, head)
    assert reply.status == 413 and reply.error["code"] == "PAYLOAD_TOO_LARGE"


def test_expect_100_continue_within_the_limit_gets_100_then_the_answer(
    server: RunningServer,
) -> None:
    with connect(server) as sock:
        sock.sendall(PUT_ONCE + b"Content-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        assert sock.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(b"hello")
        answer = read_reply(sock)
    assert answer.status == 200 and json.loads(answer.body)["body"] == "hello"


def test_chunked_body_is_refused_once_its_running_total_passes_the_limit(
    server: RunningServer,
) -> None:
    # 11 chunks of 100 bytes and no last chunk: the host answers after reading 1,000 bytes,
    # without waiting for the rest of the body.
    reply = exchange(server, CHUNKED + _chunk(b"z" * 100) * 11)
    assert reply.status == 413 and reply.closed
    assert reply.error["details"] == {"limit": LIMIT}


def test_a_huge_chunk_is_refused_from_its_declared_size(server: RunningServer) -> None:
    reply = exchange(server, CHUNKED + b"FFFFFFFFFFFF\r\nonly a few bytes")
    assert reply.status == 413 and reply.error["code"] == "PAYLOAD_TOO_LARGE"


def test_the_limit_given_to_start_in_thread_wins_over_the_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FUNCHOST_MAX_BODY_BYTES", "5000")
    with start_in_thread(app, route_prefix="", run_timers=False, max_body_bytes=10) as running:
        reply = exchange(running, PUT + b"Content-Length: 11\r\n\r\nhello world")
    assert reply.status == 413 and reply.error["details"] == {"limit": 10}


MALFORMED = {
    "length not a number": PUT + b"Content-Length: abc\r\n\r\n",
    "negative length": PUT + b"Content-Length: -1\r\n\r\n",
    "signed length": PUT + b"Content-Length: +5\r\n\r\nhello",
    "non-ASCII digit": PUT + b"Content-Length: \xb2\r\n\r\nhe",
    "2,000-digit length": PUT + b"Content-Length: " + b"9" * 2000 + b"\r\n\r\n",
    "conflicting lengths": PUT + b"Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
    "length and chunked": PUT
    + b"Content-Length: 10\r\nTransfer-Encoding: chunked\r\n\r\n"
    + _chunk(b"hello")
    + b"0\r\n\r\n",
    "unknown transfer coding": PUT + b"Transfer-Encoding: gzip\r\n\r\n",
    "negative chunk size": CHUNKED + b"-1\r\nhello\r\n0\r\n\r\n",
    "non-hex chunk size": CHUNKED + b"zz\r\nhello\r\n0\r\n\r\n",
    "0x chunk size": CHUNKED + b"0x5\r\nhello\r\n0\r\n\r\n",
    "2,000-digit chunk size": CHUNKED + b"f" * 2000 + b"\r\nhello\r\n0\r\n\r\n",
    "chunk longer than declared": CHUNKED + b"3\r\nhello\r\n0\r\n\r\n",
}


@pytest.mark.parametrize("request_bytes", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_framing_is_400_and_closes_without_a_traceback(
    server: RunningServer, request_bytes: bytes, capfd: pytest.CaptureFixture[str]
) -> None:
    reply = exchange(server, request_bytes)
    assert reply.status == 400 and reply.closed
    assert reply.error["code"] == "BAD_REQUEST"
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.parametrize(
    "request_bytes",
    [PUT + b"Content-Length: 100\r\n\r\nshort", CHUNKED + b"5\r\nhel"],
    ids=["length", "chunked"],
)
def test_truncated_body_is_400(server: RunningServer, request_bytes: bytes) -> None:
    reply = exchange(server, request_bytes, half_close=True)
    assert reply.status == 400 and reply.error["code"] == "BAD_REQUEST"


def test_memnet_serve_gives_the_host_the_apps_body_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memnet import bootstrap
    from memnet.cli import main

    repo = Path(__file__).resolve().parents[2]
    monkeypatch.setenv("MEMNET_MAX_BODY_BYTES", "12345")
    monkeypatch.setenv("MEMNET_CALLERS_FILE", str(repo / "callers.dev.json"))
    monkeypatch.setenv("MEMNET_PROFILES_DIR", str(repo / "profiles"))
    monkeypatch.setenv("MEMNET_DATA_DIR", str(tmp_path))  # restored after `serve` sets it
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(funchost, "serve_forever", lambda *_, **kw: calls.append(kw))
    try:
        assert main(["serve", "--settings", str(tmp_path / "absent.json")]) == 0
    finally:
        bootstrap.install(None)
    assert calls[0]["max_body_bytes"] == 12345
