"""App Service Authentication principals (issue 12, item 2), delegated users bound to
their own memory, the callers file's Entra entries, and the API-key pepper."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memnet import bootstrap
from memnet.adapters.local.apikeys import hash_key, read_entries
from memnet.domain.errors import ConfigError
from tests.api.test_documents import create
from tests.clients import ApiClient, DirectClient, HttpClient, Reply
from tests.conftest import doc_url, make_settings
from tests.secret_scan import PLANTED

PEPPER = PLANTED["api key pepper"]

APP_ID = "11111111-1111-4111-8111-111111111111"  # the calling service's application
SP_ID = "22222222-2222-4222-8222-222222222222"  # its service principal
USER_OID = "33333333-3333-4333-8333-333333333333"  # a signed-in user
OTHER_APP = "44444444-4444-4444-8444-444444444444"
TENANT = "77777777-7777-4777-8777-777777777777"  # the Entra tenant the platform trusts
AUDIENCE = "api://memnet-test"

SERVICE = {
    "caller_id": "assistant-web",
    "entra_app_id": APP_ID,
    "tenants": ["t1"],
    "profiles": ["project-copilot-v1"],
    "roles": ["read", "write", "forget"],
    "delegated": True,
}


def principal(
    roles: list[str],
    *,
    app: str = APP_ID,
    oid: str = SP_ID,
    scp: bool = False,
    tenant: str = TENANT,
    audience: str = AUDIENCE,
    sub: str | None = None,
) -> str:
    """The platform's header for a validated token: an application's (``sub`` is its
    service principal, as in Entra's app-only tokens) or, with ``scp``, a user's."""
    claims = [{"typ": "roles", "val": r} for r in roles]
    claims += [
        {"typ": "azp", "val": app},
        {"typ": "http://schemas.microsoft.com/identity/claims/objectidentifier", "val": oid},
        {"typ": "http://schemas.microsoft.com/identity/claims/tenantid", "val": tenant},
        {"typ": "aud", "val": audience},
        {
            "typ": "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/nameidentifier",
            "val": sub or (f"pairwise-{oid}" if scp else oid),
        },
    ]
    if scp:
        claims.append({"typ": "http://schemas.microsoft.com/identity/claims/scope", "val": "x"})
    body = {"auth_typ": "aad", "claims": claims, "name_typ": "name", "role_typ": "roles"}
    return base64.b64encode(json.dumps(body).encode()).decode()


def install(tmp_path: Path, entries: list[dict[str, object]], **settings: object) -> None:
    callers = tmp_path / "callers.json"
    callers.write_text(json.dumps({"callers": entries}))
    built = bootstrap.build(make_settings(tmp_path / "data", callers_file=callers, **settings))
    bootstrap.install(built)


@pytest.fixture(params=["direct", "http"])
def platform(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ApiClient]:
    """The app behind App Service Authentication (and API keys beside it)."""
    admin = {
        "caller_id": "ops",
        "key_sha256": hash_key("ops-key"),
        "tenants": ["*"],
        "profiles": ["*"],
        "roles": ["read", "write", "admin"],
    }
    install(
        tmp_path,
        [SERVICE, admin],
        auth_modes=("appservice", "apikeys"),
        entra_tenant_id=TENANT,
        entra_audiences=(AUDIENCE,),
    )
    if request.param == "direct":
        yield DirectClient(None)
    else:
        yield HttpClient(request.getfixturevalue("http_server"), None)
    bootstrap.install(None)


class Signed:
    """A client whose requests carry the platform's principal header."""

    def __init__(self, client: ApiClient, encoded: str) -> None:
        self._client, self._encoded = client, encoded

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: dict[str, str] | None = None,
        raw: bytes | None = None,
    ) -> Reply:
        headers = {**(headers or {}), "X-MS-CLIENT-PRINCIPAL": self._encoded}
        return self._client.request(method, path, body, headers, raw)

    def as_key(self, key: str | None) -> ApiClient:
        return self._client.as_key(key)


def as_principal(client: ApiClient, encoded: str) -> ApiClient:
    return Signed(client, encoded)


def test_an_application_principal_acts_for_any_user_of_its_tenant(platform: ApiClient):
    service = as_principal(platform, principal(["Memory.Read", "Memory.Write"]))
    assert create(service, doc_url(user="u1")).status == 201
    assert create(service, doc_url(user="u2"), key="c2").status == 201
    reply = service.request("GET", doc_url(user="u2"))
    assert reply.status == 200 and reply.data["document"]["updated_by"] == "assistant-web"


def test_app_roles_decide_the_roles_under_the_ceiling(platform: ApiClient):
    reader = as_principal(platform, principal(["Memory.Read", "Memory.Admin"]))
    reply = create(reader)
    assert reply.status == 403 and reply.error_code == "ROLE_FORBIDDEN"
    # Memory.Admin is above the callers file's ceiling for this application: not granted.
    reply = reader.request("GET", "/v1/admin/tenants/t1/holds")
    assert reply.status == 403 and reply.error_code == "ROLE_FORBIDDEN"


def test_a_principal_with_no_memnet_role_is_403(platform: ApiClient):
    reply = as_principal(platform, principal(["Other.Role"])).request("GET", doc_url())
    assert reply.status == 403 and reply.error_code == "ROLE_FORBIDDEN"


def test_an_unregistered_application_is_403(platform: ApiClient):
    encoded = principal(["Memory.Read"], app=OTHER_APP, oid=OTHER_APP)
    reply = as_principal(platform, encoded).request("GET", doc_url())
    assert reply.status == 403 and reply.error_code == "CALLER_NOT_REGISTERED"


def test_a_tenant_outside_the_grant_is_403(platform: ApiClient):
    reply = as_principal(platform, principal(["Memory.Read"])).request("GET", doc_url(tenant="t2"))
    assert reply.status == 403 and reply.error_code == "TENANT_FORBIDDEN"


def test_a_signed_in_user_reaches_only_their_own_memory(platform: ApiClient):
    signed_in = principal(["Memory.Read", "Memory.Write"], oid=USER_OID, scp=True)
    user = as_principal(platform, signed_in)
    assert create(user, doc_url(user=USER_OID)).status == 201
    for path in (doc_url(user="u1"), doc_url(user="u1") + ":history"):
        reply = user.request("GET", path)
        assert reply.status == 403 and reply.error_code == "USER_FORBIDDEN"
    reply = create(user, doc_url(user="u1"))
    assert reply.status == 403 and reply.error_code == "USER_FORBIDDEN"
    reply = user.request("GET", "/v1/tenants/t1/receipts/rcpt_x")
    assert reply.status == 403 and reply.error_code == "USER_FORBIDDEN"
    assert user.request("DELETE", f"/v1/tenants/t1/users/{USER_OID}").status == 403  # no role


@pytest.mark.parametrize(
    "encoded",
    [
        "not base64!",
        base64.b64encode(b"[1, 2]").decode(),
        base64.b64encode(json.dumps({"auth_typ": "google", "claims": []}).encode()).decode(),
        "A" * 20_000,
    ],
)
def test_a_malformed_or_foreign_principal_is_401(platform: ApiClient, encoded: str):
    reply = as_principal(platform, encoded).request("GET", doc_url())
    assert reply.status == 401 and reply.data["error"]["request_id"]


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"tenant": "88888888-8888-4888-8888-888888888888"}, "TOKEN_ISSUER"),
        ({"audience": "api://someone-else"}, "TOKEN_AUDIENCE"),
        ({"sub": "not-the-service-principal"}, "UNAUTHENTICATED"),
    ],
)
def test_a_principal_from_another_tenant_audience_or_of_no_known_kind_is_401(
    platform: ApiClient, change: dict[str, str], code: str
):
    """An application id is the same in every tenant: a platform configured with a
    multi-tenant issuer must not let another tenant's service principal in; and a token
    that is neither an application's (sub == oid) nor a user's (scp) is refused rather
    than given an application's reach."""
    encoded = principal(["Memory.Read"], **change)  # type: ignore[arg-type]
    reply = as_principal(platform, encoded).request("GET", doc_url())
    assert reply.status == 401 and reply.error_code == code


def test_a_signed_in_user_never_gets_operator_roles(platform: ApiClient):
    """admin (holds, any service) and debug stay with applications, whatever app roles
    the directory assigned to the user and whatever the grant's ceiling says."""
    admin_entry = {**SERVICE, "roles": ["read", "write", "admin", "debug", "forget"]}
    path = bootstrap.services().settings.callers_file  # the fixture's: a higher ceiling now
    assert path is not None
    path.write_text(json.dumps({"callers": [admin_entry]}))
    bootstrap.install(bootstrap.build(bootstrap.services().settings))
    signed_in = principal(["Memory.Admin", "Memory.Read"], oid=USER_OID, scp=True)
    user = as_principal(platform, signed_in)
    reply = user.request("PUT", f"/v1/admin/tenants/t1/users/{USER_OID}/hold", {"reason": "x"})
    assert reply.status == 403 and reply.error_code == "ROLE_FORBIDDEN"
    assert user.request("GET", doc_url(user=USER_OID)).status == 404  # read is kept


def test_api_keys_still_work_beside_the_platform(platform: ApiClient):
    assert platform.as_key("ops-key").request("GET", doc_url()).status == 404


@pytest.mark.parametrize("transport", ["direct", "http"])
def test_principal_headers_are_refused_when_the_platform_is_not_configured(
    transport: str, tmp_path: Path, request: pytest.FixtureRequest
):
    """A client that forges the platform's headers next to a valid key is refused: the
    headers must never be ignored silently either, since a proxy may have meant them."""
    keyed = {k: v for k, v in SERVICE.items() if k not in ("entra_app_id", "delegated")}
    install(tmp_path, [SERVICE, {**keyed, "caller_id": "k", "key_sha256": hash_key("k-key")}])
    try:
        client: ApiClient = DirectClient("k-key")
        assert client.request("GET", doc_url()).status == 404  # the key alone is fine
        if transport == "http":
            client = HttpClient(request.getfixturevalue("http_server"), "k-key")
        forged = principal(["Memory.Admin", "Memory.Read"])
        for name in ("X-MS-CLIENT-PRINCIPAL", "X-MS-CLIENT-PRINCIPAL-ID"):
            reply = client.request("GET", doc_url(), headers={name: forged})
            assert reply.status == 401 and reply.error_code == "CLIENT_PRINCIPAL_REFUSED"
    finally:
        bootstrap.install(None)


def test_the_pepper_keys_the_digest(tmp_path: Path):
    entry = {
        "caller_id": "peppered",
        "key_sha256": hash_key("secret-key", PEPPER),
        "tenants": ["t1"],
        "profiles": ["project-copilot-v1"],
        "roles": ["read"],
    }
    install(tmp_path, [entry], api_key_pepper=PEPPER)
    try:
        assert DirectClient("secret-key").request("GET", doc_url()).status == 404
        install(tmp_path, [entry])  # the same file without the pepper: the key is unknown
        reply = DirectClient("secret-key").request("GET", doc_url())
        assert reply.status == 401
    finally:
        bootstrap.install(None)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"entra_object_id": SP_ID}, "/callers/0"),  # two proofs
        ({"entra_app_id": "not a guid/"}, "/callers/0/entra_app_id"),
        ({"delegated": "yes"}, "/callers/0/delegated"),
        ({"roles": ["read", "root"]}, "/callers/0/roles"),
    ],
)
def test_a_broken_entra_entry_stops_startup(tmp_path: Path, change: dict[str, object], field: str):
    callers = tmp_path / "callers.json"
    callers.write_text(json.dumps({"callers": [{**SERVICE, **change}]}))
    with pytest.raises(ConfigError) as raised:
        from memnet.adapters.local.apikeys import principal_map

        principal_map(read_entries(callers), str(callers))
    assert raised.value.field == field


def test_a_caller_id_may_appear_once(tmp_path: Path):
    callers = tmp_path / "callers.json"
    callers.write_text(json.dumps({"callers": [SERVICE, {**SERVICE, "entra_app_id": OTHER_APP}]}))
    with pytest.raises(ConfigError, match="appears twice"):
        read_entries(callers)
