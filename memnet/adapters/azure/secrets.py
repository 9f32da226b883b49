"""Configuration secrets from Azure Key Vault (issue 12, item 5).

The API-key pepper, the extractor's key and the search admin key may live in a vault
(``MEMNET_KEYVAULT_URL``) instead of app settings; :func:`read_vault_secrets` reads them
once at startup with the app's identity (``DefaultAzureCredential``: managed identity on
Azure), through ``azure-keyvault-secrets``' ``SecretClient`` (its challenge
authentication, retries and api-version). The role needed is "Key Vault Secrets User"
(secrets/get), nothing else. A setting given in the environment (or the local settings
file, the embedded fallback) wins; the caller asks only for what it lacks.

A secret that is not in the vault (404) is absent from the answer: that setting stays
unconfigured. Anything else (403, a vault that cannot be reached, a credential that
cannot be had) is a :class:`~memnet.domain.errors.ConfigError` that stops startup and
names the secret, the HTTP status and the service's error code, never a value. The SDK
logs request and response headers (redacted) at INFO and bodies only with
``logging_enable=True``, which is never passed here.

Managed HSM URLs are refused: an HSM holds keys only, never secrets.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from azure.core.exceptions import (
    AzureError,
    ClientAuthenticationError,
    HttpResponseError,
    ResourceNotFoundError,
)
from azure.keyvault.secrets import SecretClient

from memnet.domain.errors import ConfigError

if TYPE_CHECKING:
    from azure.core.credentials import TokenCredential
    from azure.core.pipeline.transport import HttpTransport

SETTING = "MEMNET_KEYVAULT_URL"

# The app setting each secret answers for, and its name in the vault.
VAULT_SECRET_NAMES = {
    "MEMNET_API_KEY_PEPPER": "memnet-api-key-pepper",
    "MEMNET_OPENAI_API_KEY": "memnet-openai-api-key",
    "MEMNET_EMBEDDER_API_KEY": "memnet-embedder-api-key",
    "MEMNET_SEARCH_API_KEY": "memnet-search-api-key",
}

# Vault names are 3-24 letters, digits and hyphens; one DNS suffix per sovereign cloud.
VAULT_URL = re.compile(
    r"https://[A-Za-z0-9-]{3,24}\.vault\.(?:azure\.net|azure\.cn|usgovcloudapi\.net)/?",
    re.IGNORECASE,
)
SECRET_NAME = re.compile(r"[0-9A-Za-z-]{1,127}")


def read_vault_secrets(
    vault_url: str,
    names: Sequence[str],
    *,
    credential: TokenCredential | None = None,
    transport: HttpTransport[Any, Any] | None = None,
) -> dict[str, str]:
    """``name -> value`` for each of ``names`` the vault at ``vault_url`` holds.

    Validates the URL and every name before any request; one GET per secret."""
    check_vault_url(vault_url)
    for name in names:
        check_secret_name(name)
    if not names:
        return {}
    own_credential = credential is None
    credential = credential or _default_credential()
    options: dict[str, Any] = {} if transport is None else {"transport": transport}
    try:
        with SecretClient(vault_url, credential, **options) as client:
            return {name: value for name in names if (value := _get(client, name)) is not None}
    finally:
        if own_credential:
            _close(credential)


def check_vault_url(vault_url: str) -> None:
    if not VAULT_URL.fullmatch(vault_url):
        problem = "must be https://<vault>.vault.azure.net (or the .cn / .usgovcloudapi.net one)"
        raise ConfigError(vault_url, SETTING, problem)


def check_secret_name(name: str) -> None:
    if not SECRET_NAME.fullmatch(name):
        problem = "a Key Vault secret name is 1-127 letters, digits and hyphens"
        raise ConfigError(repr(name), SETTING, problem)


def _get(client: SecretClient, name: str) -> str | None:
    """The secret's current value; None when the vault has no such secret."""
    with _mapped_errors(name):
        try:
            return client.get_secret(name).value
        except ResourceNotFoundError:
            return None


@contextlib.contextmanager
def _mapped_errors(name: str) -> Iterator[None]:
    """Every failure to read ``name`` as a :class:`ConfigError` saying what the vault or
    the pipeline answered; the SDK's message is left out (it is not needed to act, and
    nothing is gained by copying service text into startup logs)."""
    try:
        yield
    except ClientAuthenticationError as error:  # before HttpResponseError: a subclass
        raise ConfigError(name, SETTING, _auth_problem(error)) from error
    except HttpResponseError as error:
        problem = f"Key Vault answered HTTP {error.status_code} ({_error_code(error)})"
        raise ConfigError(name, SETTING, problem) from error
    except (AzureError, ValueError) as error:  # ValueError: a challenge for another host
        problem = f"Key Vault could not be reached ({type(error).__name__})"
        raise ConfigError(name, SETTING, problem) from error


def _auth_problem(error: ClientAuthenticationError) -> str:
    if error.status_code is not None:
        return f"Key Vault answered HTTP {error.status_code} ({_error_code(error)})"
    return f"no token for Key Vault ({type(error).__name__})"


def _error_code(error: HttpResponseError) -> str:
    """The service's ``error.code`` (``Forbidden``, ``Unauthorized``, ...), if it sent one."""
    code = getattr(error.error, "code", None)
    return code if isinstance(code, str) and code else "no error code"


def _default_credential() -> TokenCredential:
    from azure.identity import DefaultAzureCredential  # heavy: imported on first use only

    return DefaultAzureCredential()


def _close(credential: TokenCredential) -> None:
    close = getattr(credential, "close", None)
    if callable(close):
        close()
