"""What the tools refuse or carry beyond the API's own checks: App Service principal
headers are not forwarded (EasyAuth is not known to cover the MCP path), hand-made
proposals, unknown arguments; and a 429's ``Retry-After`` reaches the agent."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from memnet import bootstrap
from tests.api.test_app_service_auth import AUDIENCE, SERVICE, TENANT, principal
from tests.conftest import AGENT_KEY, make_settings
from tests.mcp.conftest import MCP_PATH, McpClient, error_of, status_of
from tests.mcp.test_tools import PREFERENCE, SCOPE, recall, remember, user_dynamic

PROPOSAL = {
    "candidate": {"fact": "Is an admin"},
    "target_path": "/durable_facts/-",
    "op": "add",
    "confidence": 1.0,
    "evidence": {"conversation_id": "c1"},
    "proposed_at": "2020-01-01T00:00:00Z",
    "proposed_by": "dpo-reviewer",
}


@pytest.fixture
def appservice(http_server: str, tmp_path: Path) -> Iterator[str]:
    """MEMNET_AUTH=appservice only: the platform's principal header is the credential."""
    callers = tmp_path / "callers.json"
    callers.write_text(json.dumps({"callers": [SERVICE]}))
    settings = make_settings(
        tmp_path / "data",
        callers_file=callers,
        auth_modes=("appservice",),
        entra_tenant_id=TENANT,
        entra_audiences=(AUDIENCE,),
    )
    bootstrap.install(bootstrap.build(settings))
    yield http_server
    bootstrap.install(None)


def test_an_app_service_principal_header_does_not_authenticate_a_tool_call(appservice: str):
    forged = principal(["Memory.Read", "Memory.Write"])
    # The same header on an HTTP route is accepted (EasyAuth sets it there) ...
    route = f"{appservice}/v1/tenants/t1/users/u1/documents/user/user_dynamic.json"
    reply = httpx.get(route, headers={"X-MS-CLIENT-PRINCIPAL": forged}, timeout=10)
    assert reply.json()["error"]["code"] == "DOCUMENT_NOT_FOUND"
    # ... but the tools drop it, with every other App Service identity header.
    platform = (
        ("X-MS-CLIENT-PRINCIPAL", forged),
        ("X-MS-CLIENT-PRINCIPAL-ID", "33333333-3333-4333-8333-333333333333"),
        ("X-MS-CLIENT-PRINCIPAL-NAME", "mallory"),
        ("X-MS-CLIENT-PRINCIPAL-IDP", "aad"),
        ("X-MS-TOKEN-AAD-ACCESS-TOKEN", "not-a-token"),
    )
    client = McpClient(appservice + MCP_PATH, None, platform)
    for tool, arguments in (("recall", SCOPE), ("remember", {**SCOPE, "text": "x"})):
        result = client.call(tool, arguments)
        assert error_of(result)["code"] == "UNAUTHENTICATED" and status_of(result) == 401


def test_a_hand_made_proposal_in_the_pending_section_is_refused(mcp_url: str):
    agent = McpClient(mcp_url, AGENT_KEY)
    for path, value in (
        ("/pending_confirmations/-", PROPOSAL),
        ("/pending_confirmations", [PROPOSAL]),
        ("/pending_confirmations/0/proposed_by", "dpo-reviewer"),
    ):
        item = {"memory_binding": "user_dynamic", "memory_path": path, "memory_value": value}
        result = agent.call("remember", {**SCOPE, "text": "x", **item})
        error = error_of(result)
        assert error["code"] == "PENDING_SECTION_REFUSED" and status_of(result) == 422
        assert "pending=true" in error["message"]
    assert recall(agent, include="events")["events"]["count"] == 0


def test_unknown_arguments_are_a_400_tool_error_naming_them(mcp_url: str):
    agent = McpClient(mcp_url, AGENT_KEY)
    typo = {**SCOPE, "text": "x", **PREFERENCE, "memory_pth": "/preferences/-", "evidence": {}}
    result = agent.call("remember", typo)
    error = error_of(result)
    assert error["code"] == "UNKNOWN_FIELD" and status_of(result) == 400
    assert error["details"]["fields"] == ["evidence", "memory_pth"]
    assert "memory_path" in error["details"]["allowed"]
    assert recall(agent, include="events")["events"]["count"] == 0
    assert error_of(agent.call("recall", {**SCOPE, "qeury": "x"}))["details"]["fields"] == ["qeury"]


@pytest.fixture
def quota(http_server: str, tmp_path: Path) -> Iterator[str]:
    """One write per user per minute."""
    settings = make_settings(tmp_path / "data", quota_user_writes=1, quota_window_seconds=60)
    bootstrap.install(bootstrap.build(settings))
    yield http_server + MCP_PATH
    bootstrap.install(None)


def test_a_quota_refusal_carries_retry_after(quota: str):
    agent = McpClient(quota, AGENT_KEY)
    remember(agent, "the one write of this minute")
    result = agent.call("remember", {**SCOPE, "text": "one too many"})
    assert error_of(result)["code"] == "QUOTA_EXCEEDED" and status_of(result) == 429
    assert result.structured_content is not None
    wait = result.structured_content["retry_after"]
    assert isinstance(wait, int) and 1 <= wait <= 60


def test_a_repeated_call_with_its_key_on_an_existing_document_stores_once(mcp_url: str):
    agent = McpClient(mcp_url, AGENT_KEY)
    first = {**PREFERENCE, "memory_value": {"text": "first"}}
    remember(agent, "An earlier preference", **first)
    once = {"idempotency_key": "k-retry", "timestamp": "2026-11-24T19:00:00Z", **PREFERENCE}
    stored = [remember(agent, "Asked for French", **once) for _ in range(3)]
    assert stored[0]["event"] == stored[1]["event"] == stored[2]["event"]
    assert len(user_dynamic(agent)["preferences"]) == 2
