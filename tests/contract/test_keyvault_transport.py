"""The Key Vault key provider at the HTTP level (memnet.adapters.azure.keyvault).

Azure Key Vault cannot be reached from here and has no emulator in this repository, so
the real SDK pipeline (``CryptographyClient``: challenge authentication, retries,
api-version) runs over :class:`FakeVault`, an ``HttpTransport`` that records every request
and answers as the Key Vault REST API does (api-version 2025-07-01): an unauthenticated
request gets ``401`` with a ``WWW-Authenticate: Bearer authorization=..., resource=...``
challenge; ``GET /keys/<name>[/<version>]`` a key bundle; ``POST .../wrapkey`` and
``.../unwrapkey`` ``{"kid", "value"}`` with base64url values; failures
``{"error": {"code", "message"}}``. It holds real RSA keys, so a wrap and its unwrap do
real RSA-OAEP-256.

NOT a live vault: these are response shapes recorded from the REST reference and the
azure-keyvault-keys 4.11.3 models, not a session with the service.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from azure.core.credentials import AccessToken
from azure.core.exceptions import (
    ClientAuthenticationError,
    ServiceRequestError,
    ServiceResponseError,
)
from azure.core.rest import HttpRequest
from azure.keyvault.keys.crypto import CryptographyClient, KeyWrapAlgorithm
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from memnet.adapters.azure.keyvault import KeyVaultKeys
from memnet.domain.errors import ConfigError
from memnet.ports import KeyProviderError, WrappedKey
from memnet.services.replay.sealing import SealedBlobError, open_sealed, seal
from tests.contract.canned import CannedResponse, InMemoryTransport

TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47"
CHALLENGE = (
    f'Bearer authorization="https://login.microsoftonline.com/{TENANT}", '
    'resource="https://vault.azure.net"'
)
TOKEN = "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.fake.token"
API_VERSION = "2025-07-01"  # azure-keyvault-keys 4.11.3's default
OAEP_256 = padding.OAEP(mgf=padding.MGF1(hashes.SHA256()), algorithm=hashes.SHA256(), label=None)
AAD = b"tenants/acme/users/alice/snapshots/c1/s1.json"
DATA_KEY = bytes(range(32))


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def error(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


def vault_headers(extra: dict[str, str]) -> dict[str, str]:
    """The headers a Key Vault response carries, plus ``extra``."""
    return {
        "Content-Type": "application/json; charset=utf-8",
        "x-ms-request-id": str(uuid.uuid4()),
        "x-ms-keyvault-service-version": "1.9.2760.1",
        "x-ms-keyvault-region": "westeurope",
        **extra,
    }


@dataclass
class Sent:
    method: str
    path: str
    api_version: str | None
    authorization: str | None
    body: Any


@dataclass
class Answer:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class FakeVault(InMemoryTransport):
    """One vault with RSA keys; records requests; ``failures`` answer (or raise) first,
    in order, for authenticated requests."""

    host: str
    name: str = "snapshot-kek"
    challenge: str = CHALLENGE
    versions: list[str] = field(default_factory=list)
    keys: dict[str, rsa.RSAPrivateKey] = field(default_factory=dict)
    failures: list[Answer | Exception] = field(default_factory=list)
    sent: list[Sent] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.add_version()

    def add_version(self) -> str:
        """A new current version of the key (as a rotation in the vault makes)."""
        version = uuid.uuid4().hex
        self.versions.append(version)
        self.keys[version] = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        return version

    def kid(self, version: str) -> str:
        return f"https://{self.host}/keys/{self.name}/{version}"

    def send(self, request: HttpRequest, **kwargs: Any) -> CannedResponse:
        url = urlsplit(request.url)
        content = request.content
        authorization = request.headers.get("Authorization")
        self.sent.append(
            Sent(
                request.method,
                url.path,
                parse_qs(url.query).get("api-version", [None])[0],
                authorization,
                json.loads(content) if content else None,
            )
        )
        answer = self._answer(request.method, url.path, authorization, self.sent[-1].body)
        return CannedResponse(request, answer.status, answer.body, vault_headers(answer.headers))

    def _answer(self, method: str, path: str, authorization: str | None, body: Any) -> Answer:
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
        return self._operation(method, path.strip("/").split("/"), body)

    def _operation(self, method: str, parts: list[str], body: Any) -> Answer:
        operation = parts[-1] if method == "POST" else "get"
        name_and_version = parts[1:-1] if method == "POST" else parts[1:]
        name, version = name_and_version[0], (name_and_version[1:] or [self.versions[-1]])[0]
        if parts[0] != "keys" or name != self.name or version not in self.keys:
            message = f"A key with (name/id) {name}/{version} was not found in this key vault."
            return Answer(404, error("KeyNotFound", message))
        key = self.keys[version]
        if operation == "get":
            return Answer(200, self._bundle(version, key))
        if body.get("alg") != "RSA-OAEP-256":
            return Answer(400, error("BadParameter", "Unsupported algorithm"))
        if operation == "wrapkey":
            wrapped = key.public_key().encrypt(unb64url(body["value"]), OAEP_256)
            return Answer(200, {"kid": self.kid(version), "value": b64url(wrapped)})
        try:
            unwrapped = key.decrypt(unb64url(body["value"]), OAEP_256)
        except ValueError:
            return Answer(400, error("BadParameter", "Decryption failed."))
        return Answer(200, {"kid": self.kid(version), "value": b64url(unwrapped)})

    def _bundle(self, version: str, key: rsa.RSAPrivateKey) -> dict[str, Any]:
        numbers = key.public_key().public_numbers()
        return {
            "key": {
                "kid": self.kid(version),
                "kty": "RSA",
                "key_ops": ["encrypt", "decrypt", "sign", "verify", "wrapKey", "unwrapKey"],
                "n": b64url(numbers.n.to_bytes(256, "big")),
                "e": b64url(numbers.e.to_bytes(3, "big")),
            },
            "attributes": {
                "enabled": True,
                "created": 1700000000,
                "updated": 1700000000,
                "recoveryLevel": "Recoverable+Purgeable",
                "recoverableDays": 90,
            },
            "tags": {},
        }


@dataclass
class StaticCredential:
    """A TokenCredential that hands out one fixed token, recording what was asked."""

    asked: list[tuple[tuple[str, ...], str | None]] = field(default_factory=list)
    failure: Exception | None = None

    def get_token(
        self,
        *scopes: str,
        claims: str | None = None,
        tenant_id: str | None = None,
        enable_cae: bool = False,
        **kwargs: Any,
    ) -> AccessToken:
        self.asked.append((scopes, tenant_id))
        if self.failure:
            raise self.failure
        return AccessToken(TOKEN, int(time.time()) + 3600)


@pytest.fixture
def vault() -> FakeVault:
    # A vault name per test: the SDK caches each host's challenge process-wide, and every
    # test should see the whole flow.
    return FakeVault(f"kv{uuid.uuid4().hex[:12]}.vault.azure.net")


@pytest.fixture
def credential() -> StaticCredential:
    return StaticCredential()


def provider(
    vault: FakeVault, credential: StaticCredential, version: str | None = None, **options: Any
) -> KeyVaultKeys:
    key_id = f"https://{vault.host}/keys/{vault.name}" + (f"/{version}" if version else "")
    return KeyVaultKeys(key_id, credential, transport=vault, **options)


def operations(vault: FakeVault) -> list[tuple[str, str, bool]]:
    """(method, path, authenticated) of each request."""
    return [(s.method, s.path, s.authorization is not None) for s in vault.sent]


def test_wrap_posts_to_the_service_after_the_challenge(vault, credential):
    version = vault.versions[0]
    wrapped = provider(vault, credential, version).wrap(DATA_KEY)
    path = f"/keys/{vault.name}/{version}/wrapkey"
    assert operations(vault) == [("POST", path, False), ("POST", path, True)]
    challenge, real = vault.sent
    assert challenge.body is None  # the SDK elicits the challenge without the key
    assert real.body == {"alg": "RSA-OAEP-256", "value": b64url(DATA_KEY)}
    assert "=" not in real.body["value"] and real.api_version == API_VERSION
    assert real.authorization == f"Bearer {TOKEN}"
    assert credential.asked == [(("https://vault.azure.net/.default",), TENANT)]
    assert wrapped.provider == "azure-keyvault" and wrapped.algorithm == "RSA-OAEP-256"
    assert wrapped.key_id == vault.kid(version)
    assert vault.keys[version].decrypt(wrapped.wrapped, OAEP_256) == DATA_KEY


def test_wrap_never_reads_the_key_so_it_is_never_done_locally(vault, credential):
    keys = provider(vault, credential, vault.versions[0])
    for _ in range(3):
        keys.wrap(DATA_KEY)
    assert {s.method for s in vault.sent} == {"POST"}
    assert len(vault.sent) == 4  # one challenge, then one request per wrap
    assert len(credential.asked) == 1  # the token is reused


def test_the_sdks_own_wrap_key_would_wrap_locally_with_the_public_key(vault, credential):
    """Why the adapter does not call ``CryptographyClient.wrap_key``: given an RSA key it
    can read, the SDK GETs the bundle and wraps without asking the vault."""
    client = CryptographyClient(vault.kid(vault.versions[0]), credential, transport=vault)
    client.wrap_key(KeyWrapAlgorithm.rsa_oaep_256, DATA_KEY)
    assert {(s.method, s.path.endswith("/wrapkey")) for s in vault.sent} == {("GET", False)}


def test_an_unversioned_key_wraps_with_the_current_version_and_records_it(vault, credential):
    wrapped = provider(vault, credential).wrap(DATA_KEY)
    assert vault.sent[-1].path == f"/keys/{vault.name}/wrapkey"
    assert wrapped.key_id == vault.kid(vault.versions[0])


def test_unwrap_addresses_the_versioned_kid_that_wrap_returned(vault, credential):
    keys = provider(vault, credential)
    wrapped = keys.wrap(DATA_KEY)
    assert keys.unwrap(wrapped) == DATA_KEY
    last = vault.sent[-1]
    assert (last.method, last.path) == ("POST", f"/keys/{vault.name}/{vault.versions[0]}/unwrapkey")
    assert last.body == {"alg": "RSA-OAEP-256", "value": b64url(wrapped.wrapped)}
    assert last.api_version == API_VERSION


def test_a_new_key_version_keeps_old_snapshots_readable(vault, credential):
    keys = provider(vault, credential)
    old = seal(b"before rotation", AAD, keys)
    new_version = vault.add_version()
    new = seal(b"after rotation", AAD, keys)
    assert json.loads(new)["key"]["key_id"] == vault.kid(new_version)
    assert json.loads(old)["key"]["key_id"] == vault.kid(vault.versions[0])
    reader = provider(vault, StaticCredential())
    assert open_sealed(old, AAD, reader) == b"before rotation"
    assert open_sealed(new, AAD, reader) == b"after rotation"
    unwraps = [s.path for s in vault.sent if s.path.endswith("/unwrapkey") and s.body]
    assert unwraps == [
        f"/keys/{vault.name}/{vault.versions[0]}/unwrapkey",
        f"/keys/{vault.name}/{new_version}/unwrapkey",
    ]


def test_a_tampered_wrapped_key_is_refused_by_the_vault_and_fails_to_decrypt(vault, credential):
    keys = provider(vault, credential)
    document = json.loads(seal(b"secret", AAD, keys))
    wrapped = bytearray(base64.b64decode(document["key"]["wrapped"]))
    wrapped[0] ^= 1
    document["key"]["wrapped"] = base64.b64encode(bytes(wrapped)).decode()
    with pytest.raises(SealedBlobError) as raised:
        open_sealed(json.dumps(document).encode(), AAD, keys)
    assert raised.value.code == "SNAPSHOT_DECRYPT_FAILED" and not raised.value.transient


@pytest.mark.parametrize(
    ("status", "code", "transient"),
    [
        (400, "BadParameter", False),
        (401, "Unauthorized", False),
        (403, "Forbidden", False),
        (404, "KeyNotFound", False),
        (408, "RequestTimeout", True),
        (429, "Throttled", True),
        (500, "InternalServerError", True),
        (503, "ServiceUnavailable", True),
    ],
)
def test_service_errors_map_onto_transient_or_permanent(vault, credential, status, code, transient):
    keys = provider(vault, credential, retry_total=0)
    wrapped = keys.wrap(DATA_KEY)
    for operation in (lambda: keys.wrap(DATA_KEY), lambda: keys.unwrap(wrapped)):
        vault.failures.append(Answer(status, error(code, "The operation failed.")))
        with pytest.raises(KeyProviderError) as raised:
            operation()
        assert raised.value.transient is transient
        assert str(status) in str(raised.value) and code in str(raised.value)
        assert b64url(DATA_KEY) not in str(raised.value)
    assert vault.sent[-1].path.endswith("/unwrapkey") and vault.failures == []


def test_a_forbidden_unwrap_names_the_operation_and_code(vault, credential):
    keys = provider(vault, credential, retry_total=0)
    wrapped = keys.wrap(DATA_KEY)
    message = "The user, group or application 'appid=...' does not have keys unwrapKey permission"
    vault.failures.append(Answer(403, error("Forbidden", message)))
    with pytest.raises(KeyProviderError, match=r"unwrapKey answered HTTP 403 \(Forbidden\)"):
        keys.unwrap(wrapped)


def test_throttling_is_retried_by_the_pipeline_before_it_is_an_error(vault, credential):
    keys = provider(vault, credential, retry_total=1)
    keys.wrap(DATA_KEY)
    vault.failures.append(Answer(429, error("Throttled", "Too many"), {"Retry-After": "0"}))
    assert keys.unwrap(keys.wrap(DATA_KEY)) == DATA_KEY


@pytest.mark.parametrize(
    "failure",
    [ServiceRequestError("connection refused"), ServiceResponseError("connection reset")],
    ids=["request", "response"],
)
def test_transport_errors_are_transient(vault, credential, failure):
    keys = provider(vault, credential, retry_total=0)
    keys.wrap(DATA_KEY)
    vault.failures.append(failure)
    with pytest.raises(KeyProviderError) as raised:
        keys.wrap(DATA_KEY)
    assert raised.value.transient and raised.value.__cause__ is failure


def test_a_token_that_cannot_be_had_is_transient(vault):
    credential = StaticCredential(failure=ClientAuthenticationError("IMDS unreachable"))
    with pytest.raises(KeyProviderError) as raised:
        provider(vault, credential, retry_total=0).wrap(DATA_KEY)
    assert raised.value.transient
    assert [s.authorization for s in vault.sent] == [None]  # only the challenge went out


def test_a_challenge_for_another_resource_gets_no_token(vault, credential):
    vault.challenge = (
        f'Bearer authorization="https://login.microsoftonline.com/{TENANT}", '
        'resource="https://evil.example.com"'
    )
    with pytest.raises(KeyProviderError) as raised:
        provider(vault, credential).wrap(DATA_KEY)
    assert not raised.value.transient and credential.asked == []
    assert [s.authorization for s in vault.sent] == [None]


def test_unwrap_refuses_a_kid_of_another_vault_or_key_without_a_request(vault, credential):
    keys = provider(vault, credential)
    wrapped = keys.wrap(DATA_KEY)
    sent = len(vault.sent)
    elsewhere = wrapped.key_id.replace(vault.host, "attacker.vault.azure.net")
    other_key = wrapped.key_id.replace(f"/keys/{vault.name}/", "/keys/other-tenants-key/")
    unversioned = f"https://{vault.host}/keys/{vault.name}"
    for key_id in (elsewhere, other_key, unversioned, "not a url"):
        with pytest.raises(KeyProviderError) as raised:
            keys.unwrap(WrappedKey("azure-keyvault", key_id, "RSA-OAEP-256", wrapped.wrapped))
        assert not raised.value.transient
    assert len(vault.sent) == sent


def test_unwrap_refuses_a_key_of_another_provider(vault, credential):
    with pytest.raises(KeyProviderError) as raised:
        provider(vault, credential).unwrap(
            WrappedKey("local-file", "local-0123456789abcdef", "A256KW", b"x" * 40)
        )
    assert not raised.value.transient and vault.sent == []


@pytest.mark.parametrize(
    "body",
    [{"kid": "x"}, {"value": "AAAA"}, {"kid": 1, "value": "AAAA"}, {"kid": "k", "value": "!!"}],
)
def test_an_unexpected_answer_is_a_permanent_error(vault, credential, body):
    keys = provider(vault, credential)
    keys.wrap(DATA_KEY)
    vault.failures.append(Answer(200, body))
    with pytest.raises(KeyProviderError) as raised:
        keys.wrap(DATA_KEY)
    assert not raised.value.transient


def test_a_wrap_answer_naming_another_vault_is_refused(vault, credential):
    keys = provider(vault, credential)
    keys.wrap(DATA_KEY)
    kid = f"https://other.vault.azure.net/keys/{vault.name}/{vault.versions[0]}"
    vault.failures.append(Answer(200, {"kid": kid, "value": b64url(b"w" * 256)}))
    with pytest.raises(KeyProviderError):
        keys.wrap(DATA_KEY)


@pytest.mark.parametrize(
    "key_id",
    [
        "https://kv.vault.azure.net/secrets/name",
        "http://kv.vault.azure.net/keys/name",
        "https://kv.vault.azure.net/keys/",
        "https://kv.vault.azure.net/keys/name/version/extra",
        "https://kv.vault.azure.net/keys/na me",
    ],
)
def test_a_key_id_that_is_not_a_key_url_is_a_config_error(key_id, credential):
    with pytest.raises(ConfigError):
        KeyVaultKeys(key_id, credential)


def test_the_constructor_does_no_io(vault, credential):
    keys = provider(vault, credential)
    assert vault.sent == [] and credential.asked == []
    assert keys.describe() == f"azure-keyvault https://{vault.host}/keys/{vault.name}"
