"""What a web console asks first (issue 28): ``GET /v1/me`` (who the caller is) and
``GET /v1/profiles/{profile_id}`` (a profile as configured and its schemas), on both
transports; every refusal in the error shape; a ``*`` grant resolved against the loaded
profiles; a user's own (delegated) token, which both routes answer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memnet import bootstrap
from memnet.bootstrap import Services
from tests.api.test_entra_routes import USER_OID, api, entra  # noqa: F401 (fixtures)
from tests.clients import ApiClient, DirectClient, HttpClient, Reply
from tests.conftest import ADMIN_KEY, AGENT_KEY, PRIVACY_KEY, REPO, STARTER, make_settings
from tests.oidc import LocalEntra

PROFILE = f"/v1/profiles/{STARTER}"
AGENT_ME = {
    "caller_id": "dev-agent",
    "roles": ["debug", "read", "write"],
    "tenants": ["*"],
    "profiles": [STARTER],
    "user_id": None,
    "clearance": None,
}


def refused(reply: Reply, status: int, code: str) -> None:
    assert (reply.status, reply.error_code) == (status, code), reply.data
    assert set(reply.data["error"]) == {"code", "message", "request_id", "details"}
    assert reply.data["error"]["request_id"] == reply.headers["x-request-id"]


def test_me_is_the_callers_own_grant(client: ApiClient):
    reply = client.request("GET", "/v1/me")
    assert reply.status == 200 and reply.data == AGENT_ME
    privacy = client.as_key(PRIVACY_KEY).request("GET", "/v1/me").data
    assert (privacy["caller_id"], privacy["roles"]) == ("dev-privacy", ["forget"])


def test_a_star_grant_lists_every_loaded_profile(client: ApiClient, services: Services):
    me = client.as_key(ADMIN_KEY).request("GET", "/v1/me").data
    assert me["profiles"] == services.registry.profile_ids() == [STARTER]
    assert me["roles"] == ["admin", "read", "snapshots", "write"]


@pytest.fixture
def two_profiles(client: ApiClient, tmp_path: Path) -> Iterator[ApiClient]:
    """The agent's client on the shipped profiles plus a copy of the starter as
    ``second-v1``, the agent granted only ``second-v1``."""
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "schemas").symlink_to(REPO / "profiles" / "schemas")
    starter = json.loads((REPO / "profiles" / f"{STARTER}.json").read_text())
    for name in (STARTER, "second-v1"):
        (profiles / f"{name}.json").write_text(json.dumps({**starter, "profile_id": name}))
    callers = json.loads((REPO / "callers.dev.json").read_text())
    callers["callers"][0]["profiles"] = ["second-v1"]
    (tmp_path / "callers.json").write_text(json.dumps(callers))
    settings = make_settings(
        tmp_path / "data", profiles_dir=profiles, callers_file=tmp_path / "callers.json"
    )
    bootstrap.install(bootstrap.build(settings))
    yield client
    bootstrap.install(None)


def test_profiles_are_resolved_against_the_loaded_ones(two_profiles: ApiClient):
    agent = two_profiles
    assert agent.request("GET", "/v1/me").data["profiles"] == ["second-v1"]
    admin = agent.as_key(ADMIN_KEY).request("GET", "/v1/me").data
    assert admin["profiles"] == [STARTER, "second-v1"]
    assert agent.request("GET", "/v1/profiles/second-v1").data["profile_id"] == "second-v1"
    refused(agent.request("GET", PROFILE), 403, "PROFILE_FORBIDDEN")


def test_a_profile_is_served_as_configured_with_the_schemas_it_names(client: ApiClient):
    reply = client.request("GET", PROFILE)
    assert reply.status == 200, reply.data
    configured = json.loads((REPO / "profiles" / f"{STARTER}.json").read_text())
    assert reply.data["profile_id"] == STARTER and reply.data["profile"] == configured
    named = {(b["schema_id"], b["schema_version"]) for b in configured["document_bindings"]}
    schemas = reply.data["schemas"]
    assert {(sid, v) for sid, versions in schemas.items() for v in versions} == named
    for schema_id, versions in schemas.items():
        for version, schema in versions.items():
            stored = REPO / "profiles" / "schemas" / schema_id / f"{version}.json"
            assert schema == json.loads(stored.read_text())


def test_only_a_reading_role_reads_a_profile(client: ApiClient):
    refused(client.as_key(PRIVACY_KEY).request("GET", PROFILE), 403, "ROLE_FORBIDDEN")
    assert client.as_key(ADMIN_KEY).request("GET", PROFILE).status == 200


def test_an_unknown_profile_is_404_only_to_a_caller_that_could_use_it(client: ApiClient):
    """The agent may use only the starter: another id is 403 whether or not it exists,
    as for a document; an admin (``*``) may use any, so it learns it does not exist."""
    refused(client.request("GET", "/v1/profiles/nope-v1"), 403, "PROFILE_FORBIDDEN")
    admin = client.as_key(ADMIN_KEY)
    refused(admin.request("GET", "/v1/profiles/nope-v1"), 404, "PROFILE_NOT_FOUND")


@pytest.mark.parametrize("bad", ["..", ".", "-x", "a" * 129, "a%20b", "%C3%A9", "a%00", "a%2Fb"])
def test_a_hostile_profile_id_is_400_at_its_place(client: ApiClient, bad: str):
    reply = client.as_key(ADMIN_KEY).request("GET", f"/v1/profiles/{bad}")
    assert reply.error_code in ("INVALID_IDENTIFIER", "INVALID_PATH"), (bad, reply.data)
    refused(reply, 400, reply.error_code)
    assert reply.data["error"]["details"]["location"][0] == "path"


@pytest.mark.parametrize("path", ["/v1/me", PROFILE])
@pytest.mark.parametrize("key", [None, "not-a-key"])
def test_both_routes_need_a_caller(client: ApiClient, path: str, key: str | None):
    reply = client.as_key(key).request("GET", path)
    refused(reply, 401, "UNAUTHENTICATED")
    assert reply.headers.get("www-authenticate", "").startswith("Bearer")


def test_me_spends_no_quota_and_a_profile_read_only_the_callers_own(tmp_path: Path):
    """A quota of one request a window: ``/v1/me`` is never refused (not metered, as
    health details); the second profile read is (the caller's own service bucket)."""
    settings = make_settings(tmp_path / "data", quota_service_requests=1)
    bootstrap.install(bootstrap.build(settings))
    try:
        agent = DirectClient(AGENT_KEY)
        assert all(agent.request("GET", "/v1/me").status == 200 for _ in range(3))
        assert agent.request("GET", PROFILE).status == 200
        refused(agent.request("GET", PROFILE), 429, "QUOTA_EXCEEDED")
    finally:
        bootstrap.install(None)


def delegated(local: LocalEntra, roles: list[str]) -> str:
    """A user's own token for user ``USER_OID`` with these app roles."""
    return local.mint({"scp": "Memory.Access", "oid": USER_OID, "roles": roles})


def test_a_users_own_token_learns_its_user_and_reads_a_profile(
    api: HttpClient,  # noqa: F811
    entra: LocalEntra,  # noqa: F811
):
    user = api.as_key(delegated(entra, ["Memory.Read"]))
    me = user.request("GET", "/v1/me")
    assert me.status == 200, me.data
    expected: dict[str, Any] = {"caller_id": "assistant-web", "roles": ["read"]}
    expected |= {"tenants": ["t1"], "profiles": [STARTER], "user_id": USER_OID}
    assert me.data == {**expected, "clearance": None}
    assert user.request("GET", PROFILE).status == 200
    refused(user.request("GET", "/v1/health/details"), 403, "USER_FORBIDDEN")  # as before
    writer = api.as_key(delegated(entra, ["Memory.Write"]))
    refused(writer.request("GET", PROFILE), 403, "ROLE_FORBIDDEN")
