"""HTTP handlers for forgetting (spec 17; docs/forgetting.md): forget a user, forget one
conversation, their status and receipts, and the admin routes of legal holds."""

from __future__ import annotations

from memnet import bootstrap
from memnet.api import parsing
from memnet.api.access import caller_of
from memnet.api.endpoint import endpoint
from memnet.api.http import ApiRequest, ApiResponse
from memnet.api.models.requests import HoldBody


def _ids(request: ApiRequest, *kinds: str) -> list[str]:
    return [parsing.path_id(request, kind) for kind in kinds]


@endpoint
def forget_user(request: ApiRequest, request_id: str) -> ApiResponse:
    services = bootstrap.services()
    caller = caller_of(request)
    tenant_id, user_id = _ids(request, "tenant_id", "user_id")
    return ApiResponse.json(202, services.forget.request(caller, tenant_id, user_id))


@endpoint
def forget_status(request: ApiRequest, request_id: str) -> ApiResponse:
    services = bootstrap.services()
    caller = caller_of(request)
    tenant_id, user_id = _ids(request, "tenant_id", "user_id")
    return ApiResponse.json(200, services.forget.status(caller, tenant_id, user_id))


@endpoint
def forget_conversation(request: ApiRequest, request_id: str) -> ApiResponse:
    services = bootstrap.services()
    caller = caller_of(request)
    ids = _ids(request, "tenant_id", "user_id", "conversation_id")
    return ApiResponse.json(202, services.forget_conversation.request(caller, *ids))


@endpoint
def forget_conversation_status(request: ApiRequest, request_id: str) -> ApiResponse:
    services = bootstrap.services()
    caller = caller_of(request)
    ids = _ids(request, "tenant_id", "user_id", "conversation_id")
    return ApiResponse.json(200, services.forget_conversation.status(caller, *ids))


@endpoint
def get_receipt(request: ApiRequest, request_id: str) -> ApiResponse:
    services = bootstrap.services()
    caller = caller_of(request)
    tenant_id, receipt_id = _ids(request, "tenant_id", "receipt_id")
    return ApiResponse.json(200, services.forget.receipt(caller, tenant_id, receipt_id))


# -- legal holds (admin) -------------------------------------------------------------------


@endpoint
def set_hold(request: ApiRequest, request_id: str) -> ApiResponse:
    """PUT a hold on the tenant, or on one user when the route names one."""
    services = bootstrap.services()
    caller = caller_of(request, metered=False)
    tenant_id, user_id = _hold_scope(request)
    caller.require(tenant_id, "admin")
    _, body = parsing.model_body(request, services.settings.max_body_bytes, HoldBody)
    hold = body.model_dump(exclude_none=True)
    return ApiResponse.json(200, services.holds.set(tenant_id, user_id, hold, caller.caller_id))


@endpoint
def clear_hold(request: ApiRequest, request_id: str) -> ApiResponse:
    services = bootstrap.services()
    caller = caller_of(request, metered=False)
    tenant_id, user_id = _hold_scope(request)
    caller.require(tenant_id, "admin")
    return ApiResponse.json(200, services.holds.clear(tenant_id, user_id, caller.caller_id))


@endpoint
def list_holds(request: ApiRequest, request_id: str) -> ApiResponse:
    services = bootstrap.services()
    caller = caller_of(request, metered=False)
    (tenant_id,) = _ids(request, "tenant_id")
    caller.require(tenant_id, "admin")
    return ApiResponse.json(200, services.holds.policy(tenant_id))


def _hold_scope(request: ApiRequest) -> tuple[str, str | None]:
    (tenant_id,) = _ids(request, "tenant_id")
    if "user_id" not in request.route_params:
        return tenant_id, None
    return tenant_id, _ids(request, "user_id")[0]
