"""What every part of the client shares: the session, the scope (tenant, user,
profile), and reading an answer's JSON. The route groups (documents, memory,
replays, governance) are mixins over this, so each lives in its own small module
while an agent sees one ``MemnetClient``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import httpx

from memnet_client.calls import Call, segment, user_path
from memnet_client.models import JsonObject
from memnet_client.session import Session

T = TypeVar("T")


class ClientBase:
    _session: Session
    tenant: str | None
    user: str | None
    profile: str | None

    def _send(self, call: Call[T]) -> T:
        return self._session.send(call)

    def _tenant(self) -> str:
        if self.tenant is None:
            raise ValueError("no tenant: pass tenant= to MemnetClient or use for_user()")
        return self.tenant

    def _scope(self) -> tuple[str, str]:
        """(tenant, user) of a user-scoped call; a client made without them must be
        scoped with :meth:`MemnetClient.for_user` first."""
        if self.user is None:
            raise ValueError("no user: pass user= to MemnetClient or use for_user()")
        return self._tenant(), self.user

    def _user_path(self) -> str:
        return user_path(*self._scope())

    def _tenant_path(self) -> str:
        return f"/v1/tenants/{segment(self._tenant())}"

    def _profile_params(self) -> dict[str, str]:
        return {"profile_id": self.profile} if self.profile else {}


def json_of(response: httpx.Response) -> JsonObject:
    data: Any = response.json()
    if not isinstance(data, Mapping):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    return data


def replayed(response: httpx.Response) -> bool:
    """The server answered from its idempotency record (or the same snapshot again)."""
    return str(response.headers.get("idempotent-replayed", "")).lower() == "true"
