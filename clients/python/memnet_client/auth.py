"""Credentials, as ``httpx.Auth`` flows: an API key, or an Azure ``TokenCredential``.

The token side follows the Azure SDK convention without importing it: any object with
``get_token(*scopes) -> AccessToken`` (``token``, ``expires_on`` in epoch seconds) works
— ``DefaultAzureCredential``, ``ManagedIdentityCredential``, or a test's own class — so
``azure-identity`` stays an optional dependency and nothing is imported at module load.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Generator
from typing import Any, Protocol

import httpx

__all__ = ["AccessTokenLike", "TokenCredential", "ApiKeyAuth", "TokenAuth"]

# Refresh this long before expiry, as azure-core's BearerTokenCredentialPolicy does: a
# token that expires in flight is a 401 the caller did nothing to earn.
REFRESH_MARGIN_SECONDS = 300


class AccessTokenLike(Protocol):
    @property
    def token(self) -> str: ...

    @property
    def expires_on(self) -> int: ...


class TokenCredential(Protocol):
    """``azure.core.credentials.TokenCredential``, structurally."""

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessTokenLike: ...


class ApiKeyAuth(httpx.Auth):
    """``Authorization: Bearer <key>``: what the server's API-key callers expect
    (memnet/adapters/authenticators.py: a bearer token that is not a JWT is a key)."""

    def __init__(self, key: str) -> None:
        self._header = f"Bearer {key}"

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = self._header
        yield request


class TokenAuth(httpx.Auth):
    """A bearer token from ``credential.get_token(scope)``, cached until
    ``REFRESH_MARGIN_SECONDS`` before it expires. A 401 drops the cached token and
    tries once more with a fresh one (a token revoked or rotated early)."""

    def __init__(
        self,
        credential: TokenCredential,
        scope: str,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._credential, self._scope, self._clock = credential, scope, clock
        self._lock = threading.Lock()
        self._cached: AccessTokenLike | None = None

    def token(self, *, fresh: bool = False) -> str:
        with self._lock:
            cached = self._cached
            if fresh or cached is None or self._near_expiry(cached):
                cached = self._cached = self._credential.get_token(self._scope)
            return cached.token

    def _near_expiry(self, token: AccessTokenLike) -> bool:
        return token.expires_on - self._clock() < REFRESH_MARGIN_SECONDS

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = f"Bearer {self.token()}"
        response = yield request
        if response.status_code == 401:
            request.headers["Authorization"] = f"Bearer {self.token(fresh=True)}"
            yield request
