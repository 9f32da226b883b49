"""The configured ways a request proves its caller (``MEMNET_AUTH``), behind the one
:class:`~memnet.ports.Authenticator` port: API keys (the embedded default and
development), Entra ID bearer tokens, App Service Authentication. Which one a request
is for is decided by what it carries, never by a header the client can pick freely:

- ``X-MS-CLIENT-PRINCIPAL*`` headers: App Service Authentication if it is configured,
  and refused otherwise (a client could forge them where the platform does not strip
  them).
- a bearer JWT (three base64url parts): Entra ID, if configured.
- any other bearer token: an API key, if API keys are configured.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Protocol

from memnet.domain.callers import Caller
from memnet.domain.errors import Unauthenticated
from memnet.domain.principals import PrincipalMap, principal_from_claims
from memnet.ports import Authenticator

MODES = ("apikeys", "entra", "appservice")
_JWT = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*")


class TokenVerifier(Protocol):
    def verify(self, token: str) -> dict[str, object]: ...

    def describe(self) -> str: ...


def bearer_token(headers: Mapping[str, str]) -> str | None:
    scheme, _, token = headers.get("authorization", "").partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


class EntraAuthenticator:
    """A bearer JWT verified against the Entra tenant, mapped to a caller."""

    def __init__(self, verifier: TokenVerifier, principals: PrincipalMap) -> None:
        self._verifier, self._principals = verifier, principals

    def authenticate(self, headers: Mapping[str, str]) -> Caller:
        token = bearer_token(headers)
        if token is None:
            raise Unauthenticated("Send 'Authorization: Bearer <Entra ID access token>'.")
        claims = self._verifier.verify(token)
        return self._principals.caller(principal_from_claims(claims))

    def describe(self) -> str:
        return f"{self._verifier.describe()}, {len(self._principals)} principals"


class CallerModes:
    def __init__(
        self,
        *,
        api_keys: Authenticator | None = None,
        entra: Authenticator | None = None,
        app_service: Authenticator | None = None,
    ) -> None:
        self._api_keys, self._entra, self._app_service = api_keys, entra, app_service

    def authenticate(self, headers: Mapping[str, str]) -> Caller:
        if any(name.lower().startswith("x-ms-client-principal") for name in headers):
            if self._app_service is None:
                raise Unauthenticated(
                    "Client principal headers are accepted only behind App Service "
                    "Authentication, which is not configured.",
                    code="CLIENT_PRINCIPAL_REFUSED",
                )
            return self._app_service.authenticate(headers)
        token = bearer_token(headers)
        if token is not None and self._entra is not None and _JWT.fullmatch(token):
            return self._entra.authenticate(headers)
        if self._api_keys is not None:
            return self._api_keys.authenticate(headers)
        if self._entra is not None:
            return self._entra.authenticate(headers)
        raise Unauthenticated("Sign in through App Service Authentication.")

    def describe(self) -> str:
        modes = (self._api_keys, self._entra, self._app_service)
        return "; ".join(m.describe() for m in modes if m is not None)
