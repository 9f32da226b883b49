"""App Service Authentication ("Easy Auth") as the caller: the platform validates the
Entra ID token in front of the app and passes the principal in ``X-MS-CLIENT-PRINCIPAL``
(base64 JSON: ``auth_typ``, ``claims`` as ``[{"typ", "val"}]``, ``role_typ``).

Only trustworthy when the platform's authentication is on, because then the platform
strips these headers from what clients send; so the app reads them only when
``MEMNET_AUTH`` names ``appservice``, and refuses any request carrying them otherwise
(:class:`~memnet.adapters.authenticators.CallerModes`). The claims map to a caller exactly as a
validated bearer token's do (:mod:`memnet.domain.principals`).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from typing import Any

from memnet.domain.callers import Caller
from memnet.domain.errors import Unauthenticated
from memnet.domain.principals import PrincipalMap, principal_from_claims

PRINCIPAL_HEADER = "x-ms-client-principal"
_MAX_HEADER = 16_384
# Long claim type URIs the platform may use instead of the short JWT names.
_CLAIM_NAMES = {
    "http://schemas.microsoft.com/identity/claims/objectidentifier": "oid",
    "http://schemas.microsoft.com/identity/claims/scope": "scp",
    "http://schemas.microsoft.com/identity/claims/tenantid": "tid",
    "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/nameidentifier": "sub",
}


class AppServiceAuthenticator:
    """``tenant_id`` and ``audiences`` pin what the platform passes: an application id is
    the same in every Entra tenant, so a platform configured with a multi-tenant issuer
    would otherwise let another tenant's service principal of a registered application
    in."""

    def __init__(
        self, principals: PrincipalMap, tenant_id: str, audiences: Sequence[str] = ()
    ) -> None:
        self._principals, self._tenant_id, self._audiences = principals, tenant_id, audiences

    def authenticate(self, headers: Mapping[str, str]) -> Caller:
        encoded = headers.get(PRINCIPAL_HEADER)
        if not encoded:
            raise Unauthenticated("Sign in: App Service Authentication passed no principal.")
        claims = client_principal_claims(encoded)
        if claims.get("tid") != self._tenant_id:
            raise Unauthenticated(
                "The principal is from another Entra tenant.", code="TOKEN_ISSUER"
            )
        if self._audiences and claims.get("aud") not in self._audiences:
            raise Unauthenticated(
                "The principal's token is for another audience.", code="TOKEN_AUDIENCE"
            )
        return self._principals.caller(principal_from_claims(claims))

    def describe(self) -> str:
        return f"app service authentication ({len(self._principals)} principals)"


def client_principal_claims(encoded: str) -> dict[str, Any]:
    """The header's claims as a JWT would carry them: ``roles`` a list, others the
    first value of their type."""
    if len(encoded) > _MAX_HEADER:
        raise Unauthenticated("The client principal header is too large.")
    try:
        body = json.loads(base64.b64decode(encoded, validate=True))
    except (binascii.Error, ValueError) as exc:
        raise Unauthenticated("The client principal header is not base64 JSON.") from exc
    if not isinstance(body, dict) or body.get("auth_typ") != "aad":
        raise Unauthenticated("Only Entra ID (aad) principals are accepted.")
    role_type = body.get("role_typ") or "roles"
    claims: dict[str, Any] = {"roles": []}
    for claim in body.get("claims") or []:
        if not isinstance(claim, dict) or not isinstance(claim.get("val"), str):
            continue
        kind = claim.get("typ")
        if kind in (role_type, "roles"):
            claims["roles"].append(claim["val"])
        elif isinstance(kind, str):
            claims.setdefault(_CLAIM_NAMES.get(kind, kind), claim["val"])
    return claims
