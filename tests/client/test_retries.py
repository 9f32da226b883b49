"""Retries against the real server: a write whose response is lost is sent again with
the same Idempotency-Key and applied once; calls the server does not de-duplicate are
not sent twice; 429 is retried after Retry-After only within the bound."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from memnet_client import MemnetClient, RateLimited, RetryPolicy, TransportError

from memnet import bootstrap
from memnet.bootstrap import Services
from tests.client.conftest import FAST, Recording, connect, install
from tests.conftest import ADMIN_KEY, AGENT_KEY

DYNAMIC = ("user", "user_dynamic.json")
ADD = [{"op": "add", "path": "/content/preferences/-", "value": {"text": "Be brief."}}]


class LoseFirstWriteResponse(httpx.BaseTransport):
    """A real HTTP transport whose first write reaches the server and is answered, but
    whose answer is then lost, as when a connection drops on the way back."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.sent: list[httpx.Request] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        self.sent.append(request)
        if request.method != "GET" and len(self.writes) == 1:
            response.read()
            response.close()
            raise httpx.ReadError("connection reset after the server answered", request=request)
        return response

    @property
    def writes(self) -> list[httpx.Request]:
        return [r for r in self.sent if r.method != "GET"]

    def close(self) -> None:
        self.inner.close()


@pytest.fixture
def lossy(
    http_server: str, services: Services
) -> Iterator[tuple[MemnetClient, LoseFirstWriteResponse]]:
    transport = LoseFirstWriteResponse()
    with connect(http_server, AGENT_KEY, transport=transport) as client:
        yield client, transport


def test_a_lost_event_write_is_retried_with_its_key_and_stored_once(lossy, memnet: MemnetClient):
    client, transport = lossy
    written = client.write_event("written once", source_type="chat")
    first, second = transport.writes
    assert first.headers["idempotency-key"] == second.headers["idempotency-key"]
    assert written.replayed
    assert [hit.event.event_id for hit in memnet.search_events()] == [written.event.event_id]


def test_a_lost_patch_is_retried_and_applied_once(lossy, memnet: MemnetClient):
    client, transport = lossy
    result = client.patch_document(*DYNAMIC, ADD, etag=None)
    assert result.replayed and len(transport.writes) == 2
    assert memnet.get_document(*DYNAMIC).content["preferences"] == [{"text": "Be brief."}]
    assert len(memnet.get_history(*DYNAMIC).changes) == 1


def test_each_logical_call_gets_its_own_key(memnet: MemnetClient):
    first = memnet.write_event("one", source_type="chat")
    second = memnet.write_event("one", source_type="chat", timestamp=first.event.timestamp)
    assert first.event.event_id != second.event.event_id and not second.replayed


def test_a_call_the_server_does_not_deduplicate_is_not_sent_again(
    http_server: str, services: Services
):
    transport = LoseFirstWriteResponse()
    admin = connect(http_server, ADMIN_KEY, transport=transport)
    with admin, pytest.raises(TransportError) as caught:
        admin.redrive_replay("c1", "s1")
    assert isinstance(caught.value.__cause__, httpx.ReadError)
    assert len(transport.writes) == 1


def test_an_unreachable_server_is_a_transport_error_after_the_retries():
    client = MemnetClient("http://127.0.0.1:9", api_key="k", tenant="t", user="u", retry=FAST)
    with client, pytest.raises(TransportError) as caught:
        client.get_document(*DYNAMIC)
    assert isinstance(caught.value.__cause__, httpx.ConnectError)


@pytest.fixture
def quota(http_server: str, tmp_path: Path) -> Iterator[str]:
    """One write per user per one-second window."""
    install(tmp_path, quota_user_writes=1, quota_window_seconds=1)
    yield http_server
    bootstrap.install(None)


def test_429_is_retried_after_retry_after(quota: str):
    with connect(quota, AGENT_KEY) as client:
        client.write_event("first", source_type="chat")
        started = time.monotonic()
        client.write_event("second", source_type="chat")
    assert time.monotonic() - started < 5
    with connect(quota, AGENT_KEY) as client:
        assert len(client.search_events()) == 2


@pytest.fixture
def slow_quota(http_server: str, tmp_path: Path) -> Iterator[str]:
    """One write per user per minute: the second write is refused however slow the
    machine (a one-second window may roll over between the two)."""
    install(tmp_path, quota_user_writes=1, quota_window_seconds=60)
    yield http_server
    bootstrap.install(None)


def test_429_past_the_bound_is_raised_with_retry_after(slow_quota: str):
    quota = slow_quota
    strict = RetryPolicy(max_retries=3, max_wait=0.5, backoff=0.0)
    with connect(quota, AGENT_KEY, retry=strict) as client:
        client.write_event("first", source_type="chat")
        with pytest.raises(RateLimited) as caught:
            client.write_event("second", source_type="chat")
    error = caught.value
    assert error.code == "QUOTA_EXCEEDED" and error.retry_after is not None
    assert error.retry_after >= 1 and error.details["scope"] == "user"


@pytest.mark.parametrize(
    ("status", "body", "headers", "wait"),
    [
        (503, {}, {"Retry-After": "2"}, 2.0),
        (503, {}, {}, 0.5),
        (429, {}, {"Retry-After": "60"}, None),
        (409, {"error": {"code": "IDEMPOTENCY_KEY_IN_PROGRESS"}}, {"Retry-After": "1"}, 1.0),
        (409, {"error": {"code": "IDEMPOTENCY_KEY_REUSED"}}, {}, None),
        (500, {}, {}, None),
    ],
)
def test_the_policy_decides_from_status_code_and_retry_after(status, body, headers, wait):
    response = httpx.Response(status, json=body, headers=headers)
    assert RetryPolicy(max_wait=30, backoff=0.5).after_response(0, response) == wait
    assert RetryPolicy(max_retries=0).after_response(0, response) is None


def test_every_write_carries_its_own_key_and_reads_none(http_server: str, services: Services):
    transport = Recording()
    with connect(http_server, AGENT_KEY, transport=transport) as client:
        assert client.get_health() == {"status": "ok"}
        client.update(*DYNAMIC, lambda content: ADD)
        client.write_event("keyed", source_type="chat")
        client.put_snapshot("c1", "s1", [MESSAGE])
        client.search_events("keyed")
    writes = [
        r for r in transport.sent if r.method in ("PATCH", "PUT") or r.url.path.endswith("/events")
    ]
    reads = [r for r in transport.sent if r not in writes]
    assert [r.method for r in writes] == ["PATCH", "POST", "PUT"]
    assert len({r.headers["idempotency-key"] for r in writes}) == 3
    assert all(len(r.headers["idempotency-key"]) == 36 for r in writes)  # a uuid4
    assert len(reads) == 3 and not any("idempotency-key" in r.headers for r in reads)


MESSAGE = {"id": "m1", "role": "user", "text": "Hi.", "timestamp": "2026-11-24T10:00:00Z"}
