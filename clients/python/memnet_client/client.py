"""``MemnetClient``: one object for the whole API, scoped to a tenant and user so that
calls do not repeat them (``memnet.for_user("t1", "alice").get_document(...)``).

The constructor does no I/O: no token is fetched and no connection opened until the
first call (a client built at import time costs nothing and cannot fail there).
"""

from __future__ import annotations

import copy
from types import TracebackType

import httpx

from memnet_client.auth import ApiKeyAuth, TokenAuth, TokenCredential
from memnet_client.base import json_of
from memnet_client.calls import Call, segment
from memnet_client.documents import DocumentsApi
from memnet_client.exports import ExportsApi
from memnet_client.governance import GovernanceApi
from memnet_client.inventory import InventoryApi
from memnet_client.memory import MemoryApi
from memnet_client.models import JsonObject
from memnet_client.proposals import ProposalsApi
from memnet_client.replays import ReplaysApi
from memnet_client.retries import RetryPolicy
from memnet_client.session import Session

__all__ = ["MemnetClient"]


def _auth(api_key: str | None, credential: TokenCredential | None, scope: str | None) -> httpx.Auth:
    if (api_key is None) == (credential is None):
        raise ValueError("pass exactly one of api_key= or credential=")
    if api_key is not None:
        return ApiKeyAuth(api_key)
    if not scope:
        raise ValueError("credential= needs scope=, e.g. 'api://memnet-prod/.default'")
    assert credential is not None
    return TokenAuth(credential, scope)


_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})


def _check_transport_security(base_url: str, allow_http: bool) -> None:
    """A key or token sent in clear text is a key given away: ``http://`` only to this
    machine, unless the caller says otherwise (azure-core refuses bearer tokens over
    plain HTTP the same way)."""
    url = httpx.URL(base_url)
    if url.scheme == "http" and url.host not in _LOOPBACK and not allow_http:
        raise ValueError(
            f"{base_url}: credentials would travel unencrypted; use https, "
            "or pass allow_http=True for a trusted network"
        )


class MemnetClient(
    DocumentsApi, MemoryApi, ReplaysApi, GovernanceApi, ProposalsApi, InventoryApi, ExportsApi
):
    """A mem.net client.

    ``api_key`` or ``credential`` (an Azure ``TokenCredential`` such as
    ``DefaultAzureCredential()``, with ``scope``, the API's Application ID URI plus
    ``/.default``). ``tenant``, ``user`` and ``profile`` scope the calls; set them
    here or per user with :meth:`for_user`. ``transport`` is an ``httpx`` transport
    (tests, proxies); ``retry`` bounds retries and waits. ``http://`` is refused except
    to this machine unless ``allow_http`` (credentials would travel unencrypted).
    """

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        credential: TokenCredential | None = None,
        scope: str | None = None,
        tenant: str | None = None,
        user: str | None = None,
        profile: str | None = None,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
        allow_http: bool = False,
    ) -> None:
        _check_transport_security(base_url, allow_http)
        self._session = Session(
            base_url,
            _auth(api_key, credential, scope),
            retry=retry or RetryPolicy(),
            timeout=timeout,
            transport=transport,
        )
        self.tenant, self.user, self.profile = tenant, user, profile

    def for_user(self, tenant: str, user: str, *, profile: str | None = None) -> MemnetClient:
        """A client for one user, sharing this one's connections and credential (cheap:
        make one per conversation). Close the client you constructed, not these."""
        scoped = copy.copy(self)
        scoped.tenant, scoped.user = tenant, user
        scoped.profile = profile or self.profile
        return scoped

    def get_health(self) -> JsonObject:
        """``{"status": "ok"}`` when the service is up."""
        return self._send(Call("GET", "/v1/health", json_of))

    def me(self) -> JsonObject:
        """Who this client's credential is: ``{"caller_id", "roles", "tenants",
        "profiles", "user_id", "clearance"}`` (``profiles``: the loaded profiles it may
        use; ``user_id``: the user a user's own token acts for, else ``None``)."""
        return self._send(Call("GET", "/v1/me", json_of))

    def get_profile(self, profile_id: str | None = None) -> JsonObject:
        """``{"profile_id", "profile", "schemas"}``: a profile as configured and the JSON
        Schemas its bindings name (``schemas[schema_id][version]``); default, this
        client's ``profile``. Roles ``read``, ``review`` or ``admin``; a profile the
        caller may not use is :class:`Forbidden` (``PROFILE_FORBIDDEN``), an unknown one
        it could use :class:`NotFound` (``PROFILE_NOT_FOUND``)."""
        chosen = self.profile if profile_id is None else profile_id
        if chosen is None:
            raise ValueError("no profile: pass profile_id= or profile= to MemnetClient")
        return self._send(Call("GET", f"/v1/profiles/{segment(chosen)}", json_of))

    def close(self) -> None:
        self._session.close()

    def __enter__(self) -> MemnetClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
