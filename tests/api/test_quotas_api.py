"""Request quotas through the API (issue 12, item 4): 429 with Retry-After and the error
shape, writes counted separately, health and admin routes not metered, and a caller
refused by its tenant binding spends no one's quota. The counters themselves (windows,
two instances, Azurite) are tested in tests/unit/test_quotas.py and
tests/contract/test_quotas_azurite.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from memnet import bootstrap
from memnet.adapters.local.apikeys import hash_key
from tests.clients import ApiClient, DirectClient, HttpClient
from tests.conftest import doc_url, make_settings

AGENT = {
    "caller_id": "agent",
    "key_sha256": hash_key("agent-key"),
    "tenants": ["t1"],
    "profiles": ["project-copilot-v1"],
    "roles": ["read", "write", "admin"],
}
STRANGER = {**AGENT, "caller_id": "stranger", "key_sha256": hash_key("stranger-key")}
STRANGER["tenants"] = ["t2"]


@pytest.fixture(params=["direct", "http"])
def metered(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ApiClient]:
    callers = tmp_path / "callers.json"
    callers.write_text(json.dumps({"callers": [AGENT, STRANGER]}))
    settings = make_settings(
        tmp_path / "data",
        callers_file=callers,
        quota_user_requests=5,
        quota_user_writes=2,
        quota_window_seconds=3600,
    )
    bootstrap.install(bootstrap.build(settings))
    if request.param == "direct":
        yield DirectClient("agent-key")
    else:
        yield HttpClient(request.getfixturevalue("http_server"), "agent-key")
    bootstrap.install(None)


def patch(client: ApiClient, key: str, user: str = "u1") -> int:
    ops = [{"op": "add", "path": "/content/preferences/-", "value": {"text": key}}]
    headers = {"If-None-Match": "*", "Idempotency-Key": key}
    return client.request("PATCH", doc_url(user=user), {"ops": ops}, headers).status


def test_a_spent_quota_is_429_with_retry_after(metered: ApiClient):
    statuses = [metered.request("GET", doc_url()).status for _ in range(6)]
    assert statuses == [404] * 5 + [429]
    reply = metered.request("GET", doc_url())
    assert reply.status == 429 and reply.error_code == "QUOTA_EXCEEDED"
    assert 1 <= int(reply.headers["retry-after"]) <= 3600
    error = reply.data["error"]
    assert error["request_id"] == reply.headers["x-request-id"]
    assert error["details"] == {
        "scope": "user",
        "kind": "requests",
        "limit": 5,
        "window_seconds": 3600,
    }
    assert metered.request("GET", doc_url(user="u2")).status == 404  # another user's bucket


def test_writes_have_their_own_quota(metered: ApiClient):
    assert patch(metered, "a") == 201
    assert patch(metered, "b", user="u1") in (200, 201, 412)
    reply_status = patch(metered, "c")
    assert reply_status == 429
    assert metered.request("GET", doc_url()).status == 200  # reads are still allowed


def test_health_and_admin_routes_are_not_metered(metered: ApiClient):
    for _ in range(10):
        assert metered.request("GET", "/v1/health").status == 200
        assert metered.request("GET", "/v1/admin/tenants/t1/holds").status == 200
    assert metered.request("GET", doc_url()).status == 404


def test_a_caller_outside_the_tenant_spends_no_users_quota(metered: ApiClient):
    stranger = metered.as_key("stranger-key")
    for _ in range(10):
        assert stranger.request("GET", doc_url()).status == 403
    assert metered.request("GET", doc_url()).status == 404


def test_a_caller_without_the_role_spends_no_users_quota(metered: ApiClient, tmp_path: Path):
    """A read-only caller's refused writes cost the user nothing (nor do ids that are not
    identifiers create counters)."""
    reader = {**AGENT, "caller_id": "reader", "key_sha256": hash_key("reader-key")}
    reader["roles"] = ["read"]
    callers = bootstrap.services().settings.callers_file
    assert callers is not None
    callers.write_text(json.dumps({"callers": [AGENT, reader]}))
    bootstrap.install(bootstrap.build(bootstrap.services().settings))
    for i in range(5):
        assert patch(metered.as_key("reader-key"), f"r{i}") == 403
    assert patch(metered, "mine") == 201  # the user's two writes are untouched
    before = sorted(bootstrap.services().blobs.list_names("_quotas/"))
    assert metered.request("GET", doc_url(user="bad%20id")).status == 400
    assert sorted(bootstrap.services().blobs.list_names("_quotas/")) == before
