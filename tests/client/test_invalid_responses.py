"""A success status with a body that is not the route's JSON (a proxy's or captive
portal's page, an empty body) is a :class:`MemnetError`, never a bare ``ValueError``."""

from __future__ import annotations

import httpx
import pytest
from memnet_client import InvalidResponse, MemnetError

from memnet.bootstrap import Services
from tests.client.conftest import connect
from tests.conftest import AGENT_KEY


class RewritingProxy(httpx.BaseTransport):
    """Forwards to the real server, then answers with its status and ``body`` instead."""

    def __init__(self, body: bytes, content_type: str) -> None:
        self.inner, self.body, self.content_type = httpx.HTTPTransport(), body, content_type

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        real = self.inner.handle_request(request)
        real.read()
        headers = {"content-type": self.content_type, "x-request-id": "req_from_proxy"}
        return httpx.Response(real.status_code, headers=headers, content=self.body)

    def close(self) -> None:
        self.inner.close()


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"<html><body>Sign in to the Wi-Fi</body></html>", "text/html"),
        (b"", "application/json"),
        (b"[1, 2]", "application/json"),
        (b'{"document": 1}', "application/json"),
    ],
)
def test_a_success_body_that_is_not_the_routes_json_is_a_memnet_error(
    http_server: str, services: Services, body: bytes, content_type: str
):
    proxy = RewritingProxy(body, content_type)
    with (
        connect(http_server, AGENT_KEY, transport=proxy) as client,
        pytest.raises(MemnetError) as caught,
    ):
        client.write_event("hello", source_type="chat")
    error = caught.value
    assert isinstance(error, InvalidResponse) and error.code == "INVALID_RESPONSE"
    assert error.status == 201 and error.request_id == "req_from_proxy"
    assert error.message.endswith(repr(body.decode()[:200]))
    assert error.__cause__ is not None
