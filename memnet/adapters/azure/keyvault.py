"""Snapshot key-encryption keys in Azure Key Vault (spec 16.2): the Azure
:class:`~memnet.ports.KeyProvider`.

The KEK is an RSA key in a vault (or a Managed HSM), named by its URL
``https://<vault>.vault.azure.net/keys/<name>[/<version>]``. Data keys are wrapped and
unwrapped by the service (``wrapKey`` / ``unwrapKey``, ``RSA-OAEP-256``) with the app's
identity (``DefaultAzureCredential``: managed identity on Azure); the role needed is
"Key Vault Crypto Service Encryption User" (wrapKey, unwrapKey), nothing else.

Why not ``CryptographyClient.wrap_key``: that method first GETs the key bundle and, for
an RSA key it can read, wraps locally with the public key; the vault then never sees the
wrap (no audit record, no check that the key is enabled), the call needs ``keys/get``
too, and its result names the client's key id rather than the version the vault used.
So the two operations go as requests through the :class:`CryptographyClient`'s own
pipeline (``send_request``: the Key Vault challenge authentication, retries, the client's
api-version): one POST each, to the REST operations the service documents.

Versions: an unversioned key URL wraps with the key's current version (``POST
/keys/<name>/wrapkey``), and the versioned ``kid`` the vault answers with is what the
blob records; unwrapping always addresses that exact version
(``/keys/<name>/<version>/unwrapkey``). A new key version in the vault therefore keeps
old snapshots readable. A recorded kid on another vault is refused before any request:
the app's token must never be sent to a host a blob names.

Failures are :class:`~memnet.ports.KeyProviderError`: transport errors, a token that
cannot be had, 408, 429 and 5xx are transient; 400, 401, 403, 404 and an unexpected
answer are not. Messages carry the operation, the HTTP status and the service's error
code, never key material. The constructor does no I/O; the client is made on first use.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from azure.core.exceptions import (
    AzureError,
    ClientAuthenticationError,
    ServiceRequestError,
    ServiceResponseError,
)
from azure.core.rest import HttpRequest, HttpResponse
from azure.keyvault.keys.crypto import CryptographyClient, KeyWrapAlgorithm

from memnet.adapters.azure.errors import TRANSIENT_STATUSES
from memnet.domain.errors import ConfigError
from memnet.ports import KeyProviderError, WrappedKey

if TYPE_CHECKING:
    from azure.core.credentials import TokenCredential

PROVIDER = "azure-keyvault"
ALGORITHM = KeyWrapAlgorithm.rsa_oaep_256.value  # "RSA-OAEP-256"
KEY_URL = re.compile(
    r"(?P<vault>https://[A-Za-z0-9.-]+(?::[0-9]+)?)/keys/(?P<name>[A-Za-z0-9-]{1,127})"
    r"(?:/(?P<version>[A-Za-z0-9]{1,64}))?/?"
)
_BASE64URL = re.compile(r"[A-Za-z0-9_-]*=*")
_UNAVAILABLE = (ServiceRequestError, ServiceResponseError, ClientAuthenticationError)


@dataclass(frozen=True)
class KeyUrl:
    """A Key Vault key identifier, split; ``version`` None: the key's current version."""

    vault: str
    name: str
    version: str | None

    @classmethod
    def parse(cls, url: str) -> KeyUrl | None:
        found = KEY_URL.fullmatch(url)
        if found is None:
            return None
        return cls(found["vault"].lower(), found["name"], found["version"])

    def operation_path(self, operation: str) -> str:
        version = f"/{self.version}" if self.version else ""
        return f"/keys/{self.name}{version}/{operation}"


class KeyVaultKeys:
    """Data keys wrapped by the Key Vault key at ``key_id``. ``options`` go to the
    ``CryptographyClient`` (``transport``, ``retry_total``, ``api_version``, ...)."""

    def __init__(
        self, key_id: str, credential: TokenCredential | None = None, **options: Any
    ) -> None:
        key = KeyUrl.parse(key_id)
        if key is None:
            problem = "must be https://<vault>.vault.azure.net/keys/<name>[/<version>]"
            raise ConfigError("Key Vault key id", key_id, problem)
        self._key_id, self._key = key_id, key
        self._credential, self._options = credential, options
        self._crypto: CryptographyClient | None = None
        self._lock = threading.Lock()

    def wrap(self, data_key: bytes) -> WrappedKey:
        kid, wrapped = self._call("wrapKey", self._key.operation_path("wrapkey"), data_key)
        used = KeyUrl.parse(kid)
        if used is None or used.version is None or used.vault != self._key.vault:
            raise _unexpected("wrapKey", "a kid that is not a versioned key of this vault")
        return WrappedKey(PROVIDER, kid, ALGORITHM, wrapped)

    def unwrap(self, wrapped: WrappedKey) -> bytes:
        if (wrapped.provider, wrapped.algorithm) != (PROVIDER, ALGORITHM):
            message = f"a {wrapped.provider}/{wrapped.algorithm} key is not a Key Vault key's"
            raise KeyProviderError(message, transient=False)
        key = KeyUrl.parse(wrapped.key_id)
        if (
            key is None
            or key.version is None
            or (key.vault, key.name) != (self._key.vault, self._key.name)
        ):  # a blob must not make the app use another key, however it got there
            message = (
                f"{wrapped.key_id!r} is not a version of {self._key.vault}/keys/{self._key.name}"
            )
            raise KeyProviderError(message, transient=False)
        return self._call("unwrapKey", key.operation_path("unwrapkey"), wrapped.wrapped)[1]

    def describe(self) -> str:
        return f"{PROVIDER} {self._key.vault}/keys/{self._key.name}"

    def _call(self, operation: str, path: str, value: bytes) -> tuple[str, bytes]:
        """POST ``{"alg", "value"}`` to ``path``; the answer's ``(kid, value)``."""
        body = {"alg": ALGORITHM, "value": _encode(value)}
        with _mapped_errors(operation):
            response = self._client().send_request(HttpRequest("POST", path, json=body))
        if response.status_code != 200:
            raise _refused(operation, response)
        return _result(operation, response)

    def _client(self) -> CryptographyClient:
        with self._lock:
            if self._crypto is None:
                self._crypto = CryptographyClient(
                    self._key_id, self._credential or _default_credential(), **self._options
                )
            return self._crypto


def _default_credential() -> TokenCredential:
    from azure.identity import DefaultAzureCredential  # heavy: imported on first use only

    return DefaultAzureCredential()


@contextlib.contextmanager
def _mapped_errors(operation: str) -> Iterator[None]:
    """Every exception the pipeline raises, as a :class:`KeyProviderError`."""
    try:
        yield
    except _UNAVAILABLE as error:
        message = f"Key Vault {operation} unavailable ({type(error).__name__})"
        raise KeyProviderError(message, transient=True) from error
    except (AzureError, ValueError) as error:  # ValueError: a challenge for another host
        message = f"Key Vault {operation} failed ({type(error).__name__})"
        raise KeyProviderError(message, transient=False) from error


def _refused(operation: str, response: HttpResponse) -> KeyProviderError:
    status = response.status_code
    transient = status in TRANSIENT_STATUSES or status >= 500
    message = f"Key Vault {operation} answered HTTP {status} ({_error_code(response)})"
    return KeyProviderError(message, transient=transient)


def _error_code(response: HttpResponse) -> str:
    """The service's ``error.code`` (``Forbidden``, ``KeyNotFound``, ...), if it sent one."""
    try:
        code = response.json()["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return "no error code"
    return code if isinstance(code, str) else "no error code"


def _result(operation: str, response: HttpResponse) -> tuple[str, bytes]:
    try:
        body = response.json()
        kid, value = body["kid"], body["value"]
    except (ValueError, KeyError, TypeError):
        raise _unexpected(operation, "a body without kid and value") from None
    decoded = _decode(value) if isinstance(kid, str) and isinstance(value, str) else None
    if not decoded:
        raise _unexpected(operation, "a kid or value that is not base64url text")
    return kid, decoded


def _unexpected(operation: str, what: str) -> KeyProviderError:
    return KeyProviderError(f"Key Vault {operation} answered with {what}", transient=False)


def _encode(data: bytes) -> str:
    """Base64url without padding, as Key Vault writes its binary fields."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _decode(text: str) -> bytes | None:
    if not _BASE64URL.fullmatch(text):
        return None
    try:
        return base64.urlsafe_b64decode(text.rstrip("=") + "=" * (-len(text.rstrip("=")) % 4))
    except (binascii.Error, ValueError):
        return None
