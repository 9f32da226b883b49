"""A TokenCredential against an Entra-mode server: tokens from a local Entra ID
(tests/oidc.py) through a credential implementing the azure-core protocol; one token
per lifetime, a fresh one near expiry, and one retry with a fresh token after a 401."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from memnet_client import MemnetClient, Unauthorized

from memnet import bootstrap
from tests.client.conftest import FAST, append_preference
from tests.conftest import make_settings
from tests.oidc import LocalEntra

ROLES = ["Memory.Read", "Memory.Write"]


class AccessToken(NamedTuple):  # azure.core.credentials.AccessToken's shape
    token: str
    expires_on: int


class LocalCredential:
    """``get_token(*scopes)`` minting from the local Entra ID; ``lifetime`` seconds;
    ``revoked`` first tokens are already expired at the server (but not by their
    ``expires_on``), as a token revoked early would be refused."""

    def __init__(self, entra: LocalEntra, lifetime: int = 3600, revoked: int = 0) -> None:
        self.entra, self.lifetime, self.revoked = entra, lifetime, revoked
        self.scopes: list[tuple[str, ...]] = []

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        self.scopes.append(scopes)
        now = int(time.time())
        exp = now - 600 if len(self.scopes) <= self.revoked else now + self.lifetime
        token = self.entra.mint({"roles": ROLES, "exp": exp, "iat": now - 700, "nbf": now - 700})
        return AccessToken(token, now + self.lifetime)


@pytest.fixture(scope="module")
def entra() -> Iterator[LocalEntra]:
    with LocalEntra() as local:
        yield local


@pytest.fixture
def entra_server(entra: LocalEntra, tmp_path: Path, http_server: str) -> Iterator[str]:
    callers = tmp_path / "callers.json"
    grant = {
        "caller_id": "assistant-web",
        "entra_app_id": entra.client_id,
        "tenants": ["t1"],
        "profiles": ["*"],
        "roles": ["read", "write"],
    }
    callers.write_text(json.dumps({"callers": [grant]}))
    settings = make_settings(
        tmp_path / "data",
        callers_file=callers,
        auth_modes=("entra",),
        entra_metadata_url=entra.metadata_url,
        entra_audiences=(entra.audience,),
    )
    bootstrap.install(bootstrap.build(settings))
    yield http_server
    bootstrap.install(None)


def client(url: str, credential: LocalCredential) -> MemnetClient:
    scope = credential.entra.audience + "/.default"
    return MemnetClient(url, credential=credential, scope=scope, tenant="t1", user="u1", retry=FAST)


def test_a_token_credential_authenticates_and_its_token_is_cached(entra_server, entra):
    credential = LocalCredential(entra)
    with client(entra_server, credential) as memnet:
        memnet.update("user", "user_dynamic.json", append_preference("Be brief."))
        assert memnet.get_document("user", "user_dynamic.json").updated_by == "assistant-web"
    assert credential.scopes == [(entra.audience + "/.default",)]


def test_a_token_near_expiry_is_replaced_before_use(entra_server, entra):
    credential = LocalCredential(entra, lifetime=120)  # inside the refresh margin
    with client(entra_server, credential) as memnet:
        memnet.search_events()
        memnet.search_events()
    assert len(credential.scopes) == 2


def test_a_refused_token_is_replaced_once(entra_server, entra):
    credential = LocalCredential(entra, revoked=1)
    with client(entra_server, credential) as memnet:
        assert len(memnet.search_events()) == 0
    assert len(credential.scopes) == 2


def test_a_credential_whose_tokens_are_refused_raises_unauthorized(entra_server, entra):
    credential = LocalCredential(entra, revoked=99)
    with client(entra_server, credential) as memnet, pytest.raises(Unauthorized) as caught:
        memnet.search_events()
    assert caught.value.code == "TOKEN_EXPIRED" and len(credential.scopes) == 2


def test_credential_needs_a_scope_and_excludes_an_api_key(entra):
    credential = LocalCredential(entra)
    with pytest.raises(ValueError, match="scope"):
        MemnetClient("https://x", credential=credential)
    with pytest.raises(ValueError, match="exactly one"):
        MemnetClient("https://x", credential=credential, api_key="k", scope="s")
    assert credential.scopes == []  # the constructor fetched nothing


@pytest.mark.parametrize("url", ["http://memnet.example.com", "http://10.0.0.5:7071"])
def test_plain_http_beyond_this_machine_is_refused_before_any_io(url: str):
    with pytest.raises(ValueError, match="unencrypted"):
        MemnetClient(url, api_key="k")
    MemnetClient(url, api_key="k", allow_http=True).close()  # a trusted network, said so


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:7071", "http://localhost:7071", "http://[::1]:7071", "https://x.io"]
)
def test_https_and_this_machine_are_allowed(url: str):
    MemnetClient(url, api_key="k").close()
