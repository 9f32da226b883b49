"""Legal holds (spec 17, open decision 3) through the admin routes, on both backends: held
data survives a forget, the receipt says what was kept and why, holds are validated,
audited in the governance log, and only admins may set them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from memnet import bootstrap
from memnet.bootstrap import Services
from memnet.domain.layout import governance_prefix
from tests.api.forgetting import build, drain_forget, index_ids, names, seed
from tests.clients import ApiClient, DirectClient
from tests.conftest import ADMIN_KEY, AGENT_KEY, PRIVACY_KEY, STORAGE_BACKENDS, doc_url

USER = "/v1/tenants/t1/users/u1"
TENANT_HOLD = "/v1/admin/tenants/t1/hold"
USER_HOLD = "/v1/admin/tenants/t1/users/u1/hold"


@pytest.fixture(params=STORAGE_BACKENDS)
def services(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Services]:
    yield build(request, tmp_path / "data")
    bootstrap.install(None)


def forget_and_receipt(client: ApiClient, services: Services) -> dict:
    privacy = client.as_key(PRIVACY_KEY)
    assert privacy.request("DELETE", USER).status == 202
    drain_forget(services)
    status = privacy.request("GET", USER + "/forget").data
    assert status["status"] == "done"
    return privacy.request("GET", status["receipt_url"]).data


def test_a_user_hold_keeps_its_kinds_and_the_receipt_says_why(client: ApiClient, services):
    admin = client.as_key(ADMIN_KEY)
    seed(client.as_key(AGENT_KEY), services)
    hold = admin.request("PUT", USER_HOLD, {"reason": "Case 42", "kinds": ["documents", "audit"]})
    assert hold.status == 200 and hold.data["kinds"] == ["documents", "audit"]
    receipt = forget_and_receipt(client, services)
    left = names(services)
    assert left and all("/documents/" in n or "/audit" in n for n in left)
    assert index_ids(services) == []
    kept = receipt["kept"]
    assert set(kept) == {"documents", "audit"}
    assert kept["documents"]["reason"] == "legal_hold"
    assert kept["documents"]["hold_id"] == hold.data["hold_id"]
    assert kept["documents"]["hold_reason"] == "Case 42" and kept["audit"]["scope"] == "user"
    assert "documents" not in receipt["deleted"] and receipt["deleted"]["events"]["count"] == 4
    assert receipt["verification"]["blobs_remaining"] == 0  # nothing that is not held


def test_a_hold_on_documents_keeps_their_history_readable(services):
    """A kept document keeps its audit chain: its history, a rebase and an idempotent
    settle walk it."""
    admin, agent = DirectClient(ADMIN_KEY), DirectClient(AGENT_KEY)
    seed(agent, services)
    hold = admin.request("PUT", USER_HOLD, {"reason": "Case 7", "kinds": ["documents"]})
    assert hold.status == 200
    receipt = forget_and_receipt(agent, services)
    assert set(receipt["kept"]) == {"documents", "audit"}
    history = admin.request("GET", doc_url() + ":history")
    assert history.status == 200 and history.data["changes"]


def test_a_tenant_hold_keeps_everything_it_names_for_every_user(services):
    admin, agent = DirectClient(ADMIN_KEY), DirectClient(AGENT_KEY)
    seed(agent, services)
    assert admin.request("PUT", TENANT_HOLD, {"reason": "Litigation"}).status == 200
    before = names(services)
    receipt = forget_and_receipt(agent, services)
    assert set(receipt["kept"]) == {"documents", "snapshots", "events", "audit", "replays"}
    assert {k["scope"] for k in receipt["kept"].values()} == {"tenant"}
    assert len(index_ids(services)) == 4  # index entries follow their events
    left = set(names(services))
    assert left == {n for n in before if "/idempotency/" not in n and "/misc/" not in n}


def test_after_clearing_a_hold_the_next_forget_removes_the_rest(services):
    admin, agent = DirectClient(ADMIN_KEY), DirectClient(AGENT_KEY)
    seed(agent, services)
    admin.request("PUT", USER_HOLD, {"reason": "Case 42"})
    forget_and_receipt(agent, services)
    assert names(services)
    cleared = admin.request("DELETE", USER_HOLD)
    assert cleared.status == 200 and cleared.data["reason"] == "Case 42"
    assert admin.request("DELETE", USER_HOLD).error_code == "HOLD_NOT_FOUND"
    receipt = forget_and_receipt(agent, services)
    assert names(services) == [] and receipt["kept"] == {}


def test_holds_are_listed_and_logged(services):
    admin = DirectClient(ADMIN_KEY)
    admin.request("PUT", TENANT_HOLD, {"reason": "Audit", "kinds": ["audit"]})
    admin.request("PUT", USER_HOLD, {"reason": "Case 7"})
    listed = admin.request("GET", "/v1/admin/tenants/t1/holds").data
    assert listed["tenant"]["kinds"] == ["audit"] and listed["users"]["u1"]["reason"] == "Case 7"
    admin.request("DELETE", TENANT_HOLD)
    prefix = governance_prefix("t1") + "log/"
    log = [json.loads(services.blobs.read(n).data) for n in services.blobs.list_names(prefix)]
    assert sorted(e["action"] for e in log) == ["hold_cleared", "hold_set", "hold_set"]
    assert {e["actor"] for e in log} == {"dev-admin"}


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"reason": ""},
        {"reason": "x" * 501},
        {"reason": 7},
        {"reason": "ok", "kinds": []},
        {"reason": "ok", "kinds": ["idempotency"]},
        {"reason": "ok", "kinds": ["audit", "audit"]},
        {"reason": "ok", "kinds": "audit"},
        {"reason": "ok", "extra": 1},
    ],
)
def test_bad_holds_are_400_and_set_nothing(services, body):
    admin = DirectClient(ADMIN_KEY)
    reply = admin.request("PUT", USER_HOLD, body)
    assert reply.status == 400 and reply.data["error"]["code"] in ("INVALID_FIELD", "UNKNOWN_FIELD")
    assert admin.request("GET", "/v1/admin/tenants/t1/holds").data["users"] == {}


def test_only_admins_manage_holds(services):
    for key in (AGENT_KEY, PRIVACY_KEY):
        client = DirectClient(key)
        assert client.request("PUT", TENANT_HOLD, {"reason": "x"}).status == 403
        assert client.request("DELETE", USER_HOLD).status == 403
        assert client.request("GET", "/v1/admin/tenants/t1/holds").status == 403
    bad = DirectClient(ADMIN_KEY).request("PUT", "/v1/admin/tenants/t1/users/_x/hold", {})
    assert bad.status == 400 and bad.error_code == "INVALID_IDENTIFIER"
