"""Who is calling, before a handler does any work (spec 16.1, 10.7): the caller the
request proves, the one user a delegated token is bound to, and the request quotas.

Quotas are charged after authentication, and a user's buckets only when the caller is
bound to the user's tenant: a caller cannot spend another tenant's users' quota by
sending requests it will be refused. Health is not metered (it touches nothing) and
neither are the admin routes (operators' few calls: reindex, legal holds).
"""

from __future__ import annotations

from memnet import bootstrap
from memnet.api.http import ApiRequest
from memnet.domain.callers import Caller


def caller_of(request: ApiRequest, *, write: bool | None = None, metered: bool = True) -> Caller:
    """The authenticated caller; ``write`` defaults to "not a GET" (the POSTs that only
    read, search and context assembly, say ``write=False``)."""
    services = bootstrap.services()
    caller = services.authenticator.authenticate(request.headers)
    tenant_id = request.route_params.get("tenant_id")
    user_id = request.route_params.get("user_id")
    caller.require_user(user_id)
    if metered:
        charged_user = user_id if tenant_id is not None and caller.bound_to(tenant_id) else None
        services.quotas.charge(
            caller.caller_id,
            tenant_id if charged_user else None,
            charged_user,
            write=request.method != "GET" if write is None else write,
        )
    return caller
