"""Configuration secrets from Key Vault at the HTTP level (memnet.adapters.azure.secrets).

As in ``test_keyvault_transport.py``: no vault can be reached from here, so the real SDK
pipeline (``SecretClient``: challenge authentication, retries, api-version) runs over
:class:`FakeSecretVault`, an ``HttpTransport`` that records every request and answers as
the Key Vault REST API does: ``401`` with a ``WWW-Authenticate`` challenge to an
unauthenticated request; ``GET /secrets/<name>/`` (no version: the current one) a secret
bundle ``{"value", "id", "attributes"}``; failures ``{"error": {"code", "message"}}``.

NOT a live vault: response shapes recorded from the REST reference (Get Secret) and the
azure-keyvault-secrets 4.12.0 models, not a session with the service.
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from azure.core.exceptions import ClientAuthenticationError, ServiceRequestError
from azure.core.rest import HttpRequest

from memnet.adapters.azure.secrets import VAULT_SECRET_NAMES, read_vault_secrets
from memnet.domain.errors import ConfigError
from tests.contract.canned import CannedResponse, InMemoryTransport
from tests.contract.test_keyvault_transport import (
    CHALLENGE,
    TENANT,
    TOKEN,
    Answer,
    Sent,
    StaticCredential,
    error,
    vault_headers,
)
from tests.secret_scan import PLANTED

API_VERSION = "2026-04-01"  # azure-keyvault-secrets 4.12.0's default
PEPPER = PLANTED["api key pepper"]
OPENAI_KEY = PLANTED["openai api key"]


@dataclass
class FakeSecretVault(InMemoryTransport):
    """One vault holding ``secrets``; records requests; ``failures`` answer (or raise)
    first, in order, for authenticated requests."""

    host: str
    challenge: str = CHALLENGE
    secrets: dict[str, str] = field(default_factory=dict)
    failures: list[Answer | Exception] = field(default_factory=list)
    sent: list[Sent] = field(default_factory=list)
    slept: list[float] = field(default_factory=list)

    def send(self, request: HttpRequest, **kwargs: Any) -> CannedResponse:
        url = urlsplit(request.url)
        authorization = request.headers.get("Authorization")
        api_version = parse_qs(url.query).get("api-version", [None])[0]
        self.sent.append(Sent(request.method, url.path, api_version, authorization, None))
        answer = self._answer(request.method, url.path, authorization)
        return CannedResponse(request, answer.status, answer.body, vault_headers(answer.headers))

    def _answer(self, method: str, path: str, authorization: str | None) -> Answer:
        if authorization is None:
            message = "AKV10000: Request is missing a Bearer or PoP token."
            return Answer(401, error("Unauthorized", message), {"WWW-Authenticate": self.challenge})
        if authorization != f"Bearer {TOKEN}":
            return Answer(401, error("Unauthorized", "AKV10022: Invalid audience."))
        if self.failures:
            failure = self.failures.pop(0)
            if isinstance(failure, Exception):
                raise failure
            return failure
        return self._get(method, path.strip("/").split("/"))

    def _get(self, method: str, parts: list[str]) -> Answer:
        if method != "GET" or parts[0] != "secrets" or len(parts) != 2:
            return Answer(400, error("BadParameter", "Unexpected request"))
        name = parts[1]
        if name not in self.secrets:
            message = f"A secret with (name/id) {name} was not found in this key vault."
            return Answer(404, error("SecretNotFound", message))
        return Answer(200, self._bundle(name))

    def _bundle(self, name: str) -> dict[str, Any]:
        return {
            "value": self.secrets[name],
            "id": f"https://{self.host}/secrets/{name}/{uuid.uuid4().hex}",
            "attributes": {
                "enabled": True,
                "created": 1700000000,
                "updated": 1700000000,
                "recoveryLevel": "Recoverable+Purgeable",
                "recoverableDays": 90,
            },
            "tags": {},
        }

    def sleep(self, duration: float) -> None:  # the retry policy's backoff: none in tests
        self.slept.append(duration)


@pytest.fixture
def vault() -> FakeSecretVault:
    # A vault name per test: the SDK caches each host's challenge process-wide.
    return FakeSecretVault(f"kv{uuid.uuid4().hex[:12]}.vault.azure.net")


@pytest.fixture
def credential() -> StaticCredential:
    return StaticCredential()


def read(vault: FakeSecretVault, credential: StaticCredential, *names: str) -> dict[str, str]:
    return read_vault_secrets(
        f"https://{vault.host}", names, credential=credential, transport=vault
    )


def test_a_secret_is_read_with_a_get_after_the_challenge(vault, credential):
    vault.secrets["memnet-api-key-pepper"] = PEPPER
    assert read(vault, credential, "memnet-api-key-pepper") == {"memnet-api-key-pepper": PEPPER}
    path = "/secrets/memnet-api-key-pepper/"  # no version: the current one
    challenge, real = vault.sent
    assert (challenge.method, challenge.path, challenge.authorization) == ("GET", path, None)
    assert (real.method, real.path, real.api_version) == ("GET", path, API_VERSION)
    assert real.authorization == f"Bearer {TOKEN}"
    assert credential.asked == [(("https://vault.azure.net/.default",), TENANT)]


def test_several_secrets_share_one_token(vault, credential):
    vault.secrets.update({"memnet-api-key-pepper": PEPPER, "memnet-openai-api-key": OPENAI_KEY})
    found = read(vault, credential, "memnet-api-key-pepper", "memnet-openai-api-key")
    assert found == {"memnet-api-key-pepper": PEPPER, "memnet-openai-api-key": OPENAI_KEY}
    assert [s.path for s in vault.sent if s.authorization] == [
        "/secrets/memnet-api-key-pepper/",
        "/secrets/memnet-openai-api-key/",
    ]
    assert len(credential.asked) == 1


def test_a_missing_secret_is_absent_so_the_setting_stays_unconfigured(vault, credential):
    vault.secrets["memnet-api-key-pepper"] = PEPPER
    found = read(vault, credential, "memnet-api-key-pepper", "memnet-search-api-key")
    assert found == {"memnet-api-key-pepper": PEPPER}
    assert vault.sent[-1].path == "/secrets/memnet-search-api-key/"


def test_a_forbidden_secret_is_a_config_error_naming_it_and_the_status(vault, credential):
    vault.secrets["memnet-api-key-pepper"] = PEPPER
    message = "The user, group or application 'appid=...' does not have secrets get permission"
    vault.failures.append(Answer(403, error("Forbidden", message)))
    with pytest.raises(ConfigError) as raised:
        read(vault, credential, "memnet-api-key-pepper")
    assert raised.value.source == "memnet-api-key-pepper"
    assert raised.value.field == "MEMNET_KEYVAULT_URL"
    assert raised.value.problem == "Key Vault answered HTTP 403 (Forbidden)"
    assert PEPPER not in str(raised.value)


def test_a_failure_stops_at_the_secret_that_failed(vault, credential):
    vault.secrets.update({"memnet-api-key-pepper": PEPPER, "memnet-openai-api-key": OPENAI_KEY})
    vault.failures += [Answer(200, vault._bundle("memnet-api-key-pepper"))]
    vault.failures += [Answer(403, error("Forbidden", "denied"))]
    with pytest.raises(ConfigError, match=r"^memnet-openai-api-key: .*HTTP 403"):
        read(vault, credential, "memnet-api-key-pepper", "memnet-openai-api-key")


def test_a_rejected_token_is_a_config_error_with_the_status(vault, credential):
    vault.failures.append(Answer(401, error("Unauthorized", "AKV10032: Invalid issuer.")))
    with pytest.raises(ConfigError) as raised:
        read(vault, credential, "memnet-api-key-pepper")
    assert raised.value.problem == "Key Vault answered HTTP 401 (Unauthorized)"


def test_a_credential_that_cannot_get_a_token_is_a_config_error(vault):
    credential = StaticCredential(failure=ClientAuthenticationError("no managed identity"))
    with pytest.raises(ConfigError) as raised:
        read(vault, credential, "memnet-api-key-pepper")
    assert raised.value.problem == "no token for Key Vault (ClientAuthenticationError)"


def test_an_unreachable_vault_is_a_config_error_after_the_pipelines_retries(vault, credential):
    vault.failures += [ServiceRequestError("Name or service not known")] * 4
    with pytest.raises(ConfigError) as raised:
        read(vault, credential, "memnet-api-key-pepper")
    assert raised.value.problem == "Key Vault could not be reached (ServiceRequestError)"
    assert raised.value.source == "memnet-api-key-pepper"
    assert vault.failures == [] and len([s for s in vault.sent if s.authorization]) == 4
    assert vault.slept == [1.6, 3.2]  # azure-core's backoff: none before the first retry


@pytest.mark.parametrize("status", [429, 500, 503])
def test_throttling_and_server_errors_are_retried_then_reported(vault, credential, status):
    vault.failures += [Answer(status, error("ServiceUnavailable", "busy"))] * 4
    with pytest.raises(ConfigError, match=f"HTTP {status} \\(ServiceUnavailable\\)"):
        read(vault, credential, "memnet-api-key-pepper")
    assert len([s for s in vault.sent if s.authorization]) == 4


def test_a_challenge_for_another_resource_gets_no_token(credential):
    other = (
        'Bearer authorization="https://login.microsoftonline.com/t", resource="https://x.example"'
    )
    vault = FakeSecretVault(f"kv{uuid.uuid4().hex[:12]}.vault.azure.net", challenge=other)
    with pytest.raises(ConfigError, match=r"could not be reached \(ValueError\)"):
        read(vault, credential, "memnet-api-key-pepper")
    assert credential.asked == [] and [s.authorization for s in vault.sent] == [None]


@pytest.mark.parametrize(
    "url",
    [
        "http://kv1.vault.azure.net",
        "https://kv1.vault.azure.net/secrets/x",
        "https://kv1.example.com",
        "https://kv1.managedhsm.azure.net",  # an HSM holds keys only
        "https://kv1.vault.azure.net.evil.example",
        "kv1.vault.azure.net",
    ],
)
def test_a_url_that_is_not_a_vault_is_a_config_error_before_any_request(url, credential):
    with pytest.raises(ConfigError) as raised:
        read_vault_secrets(url, ["memnet-api-key-pepper"], credential=credential)
    assert (raised.value.source, raised.value.field) == (url, "MEMNET_KEYVAULT_URL")
    assert credential.asked == []


@pytest.mark.parametrize(
    "url",
    [
        "https://kv1.vault.azure.net",
        "https://KV-1.vault.azure.cn/",
        "https://kv1.vault.usgovcloudapi.net",
    ],
)
def test_vault_urls_of_each_cloud_are_accepted(url, credential):
    assert read_vault_secrets(url, [], credential=credential) == {}


@pytest.mark.parametrize("name", ["", "a_b", "a/b", "a" * 128, "memnet api"])
def test_a_name_that_is_not_a_secret_name_is_a_config_error(vault, credential, name):
    with pytest.raises(ConfigError, match="letters, digits and hyphens"):
        read(vault, credential, name)
    assert vault.sent == []


def test_the_mapping_names_every_secret_setting_with_a_valid_secret_name(vault, credential):
    assert set(VAULT_SECRET_NAMES) == {
        "MEMNET_API_KEY_PEPPER",
        "MEMNET_OPENAI_API_KEY",
        "MEMNET_EMBEDDER_API_KEY",
        "MEMNET_SEARCH_API_KEY",
    }
    assert read(vault, credential, *VAULT_SECRET_NAMES.values()) == {}


def test_no_secret_value_reaches_the_logs_even_at_debug(vault, credential, caplog):
    vault.secrets["memnet-api-key-pepper"] = PEPPER
    caplog.set_level(logging.DEBUG)
    # The SDK's own logger too: `memnet`'s command line quiets "azure" to WARNING, and a
    # test that ran it in this process leaves it so.
    caplog.set_level(logging.DEBUG, logger="azure")
    assert read(vault, credential, "memnet-api-key-pepper")
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "/secrets/memnet-api-key-pepper/" in logged  # the SDK's request log is on
    assert PEPPER not in logged and TOKEN not in logged
    assert json.dumps(PEPPER) not in logged
