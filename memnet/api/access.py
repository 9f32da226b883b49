"""Who is calling, before a handler does any work (spec 16.1, 10.7): the caller the
request proves, the one user a delegated token is bound to, and the request quotas.

Quotas are charged after authentication, and a user's buckets only when the caller is
bound to the user's tenant, holds a role that can do this kind of request, and names
well-formed ids: a caller cannot spend a user's quota (or create counters for made-up
users) with requests it will be refused on those grounds. Health is not metered (it
touches nothing) and neither are the admin routes (operators' few calls: reindex, legal
holds).
"""

from __future__ import annotations

from memnet.api.http import ApiRequest
from memnet.container import Services
from memnet.domain.callers import Caller
from memnet.domain.identifiers import SEGMENT


def caller_of(
    request: ApiRequest,
    services: Services,
    *,
    write: bool | None = None,
    metered: bool = True,
    userless: bool = False,
) -> Caller:
    """The authenticated caller; ``write`` defaults to "not a GET" (the POSTs that only
    read, search and context assembly, say ``write=False``). ``userless``: a route about
    no user's data (who the caller is, a profile's configuration), which a user's own
    token may call too; any other route without a user refuses such a token."""
    caller = services.authenticator.authenticate(request.headers)
    tenant_id = request.route_params.get("tenant_id")
    # ``users/{user_id}:export`` fills the parameter with the suffix: the user is before
    # it (a user id holds no ``:``)
    user_id = (request.route_params.get("user_id") or "").partition(":")[0] or None
    if not userless:
        caller.require_user(user_id)
    if metered:
        writes = request.method != "GET" if write is None else write
        mine = _may_spend(caller, tenant_id, user_id, writes)
        services.quotas.charge(
            caller.caller_id,
            tenant_id if mine else None,
            user_id if mine else None,
            write=writes,
        )
    return caller


_WRITE_ROLES = frozenset({"write", "admin", "forget", "review"})
_READ_ROLES = frozenset({"read", "admin", "forget", "snapshots", "debug", "review"})


def _may_spend(caller: Caller, tenant_id: str | None, user_id: str | None, write: bool) -> bool:
    """Whether this request may spend the user's quota: the tenant is the caller's, a
    role of the caller can do this kind of request, and both ids are well formed."""
    if tenant_id is None or user_id is None or not caller.bound_to(tenant_id):
        return False
    if not caller.roles & (_WRITE_ROLES if write else _READ_ROLES):
        return False
    return bool(SEGMENT.fullmatch(tenant_id) and SEGMENT.fullmatch(user_id))
