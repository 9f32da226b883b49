"""Whose memory a tool call is about: the tenant and user of its arguments, the user of a
delegated token when the arguments name none. The API checks both against the caller."""

from __future__ import annotations

from dataclasses import dataclass

from memnet.api.tools.invocation import Invocation, text_arg
from memnet.domain.callers import Caller
from memnet.domain.errors import BadRequest


@dataclass(frozen=True)
class Scope:
    tenant_id: str
    user_id: str

    @property
    def params(self) -> dict[str, str]:
        return {"tenant_id": self.tenant_id, "user_id": self.user_id}

    def path(self, suffix: str) -> str:
        return f"/v1/tenants/{self.tenant_id}/users/{self.user_id}/{suffix}"


def scope_of(call: Invocation) -> Scope:
    tenant_id = text_arg(call.arguments, "tenant_id", required=True) or ""
    user_id = text_arg(call.arguments, "user_id")
    if user_id is None:
        user_id = authenticated(call).user_id
    if user_id is None:
        raise BadRequest("user_id is required.", code="MISSING_FIELD", field="user_id")
    return Scope(tenant_id, user_id)


def authenticated(call: Invocation) -> Caller:
    """The caller the MCP request's headers prove (401 otherwise), as every route does."""
    return call.services().authenticator.authenticate(call.headers)
