"""HTTP handlers for forgetting (spec 17; docs/forgetting.md): forget a user, forget one
conversation, their status and receipts, and the admin routes of legal holds."""

from __future__ import annotations

from memnet.api import parsing
from memnet.api.endpoint import RequestContext, endpoint
from memnet.api.exports import refuse_export
from memnet.api.http import ApiRequest, ApiResponse
from memnet.api.models.requests import HoldBody


def _ids(request: ApiRequest, *kinds: str) -> list[str]:
    return [parsing.path_id(request, kind) for kind in kinds]


@endpoint()
def forget_user(request: ApiRequest, ctx: RequestContext) -> ApiResponse:
    refuse_export(request)
    tenant_id, user_id = _ids(request, "tenant_id", "user_id")
    return ApiResponse.json(202, ctx.services.forget.request(ctx.caller, tenant_id, user_id))


@endpoint()
def forget_status(request: ApiRequest, ctx: RequestContext) -> ApiResponse:
    tenant_id, user_id = _ids(request, "tenant_id", "user_id")
    return ApiResponse.json(200, ctx.services.forget.status(ctx.caller, tenant_id, user_id))


@endpoint()
def forget_conversation(request: ApiRequest, ctx: RequestContext) -> ApiResponse:
    ids = _ids(request, "tenant_id", "user_id", "conversation_id")
    return ApiResponse.json(202, ctx.services.forget_conversation.request(ctx.caller, *ids))


@endpoint()
def forget_conversation_status(request: ApiRequest, ctx: RequestContext) -> ApiResponse:
    ids = _ids(request, "tenant_id", "user_id", "conversation_id")
    return ApiResponse.json(200, ctx.services.forget_conversation.status(ctx.caller, *ids))


@endpoint()
def get_receipt(request: ApiRequest, ctx: RequestContext) -> ApiResponse:
    tenant_id, receipt_id = _ids(request, "tenant_id", "receipt_id")
    return ApiResponse.json(200, ctx.services.forget.receipt(ctx.caller, tenant_id, receipt_id))


# -- legal holds (admin) -------------------------------------------------------------------


@endpoint(metered=False)
def set_hold(request: ApiRequest, ctx: RequestContext) -> ApiResponse:
    """PUT a hold on the tenant, or on one user when the route names one."""
    tenant_id, user_id = _hold_scope(request)
    ctx.caller.require(tenant_id, "admin")
    _, body = parsing.model_body(request, ctx.services.settings.max_body_bytes, HoldBody)
    hold = body.model_dump(exclude_none=True)
    return ApiResponse.json(
        200, ctx.services.holds.set(tenant_id, user_id, hold, ctx.caller.caller_id).as_json()
    )


@endpoint(metered=False)
def clear_hold(request: ApiRequest, ctx: RequestContext) -> ApiResponse:
    tenant_id, user_id = _hold_scope(request)
    ctx.caller.require(tenant_id, "admin")
    cleared = ctx.services.holds.clear(tenant_id, user_id, ctx.caller.caller_id)
    return ApiResponse.json(200, cleared.as_json())


@endpoint(metered=False)
def list_holds(request: ApiRequest, ctx: RequestContext) -> ApiResponse:
    (tenant_id,) = _ids(request, "tenant_id")
    ctx.caller.require(tenant_id, "admin")
    return ApiResponse.json(200, ctx.services.holds.policy(tenant_id).as_json())


def _hold_scope(request: ApiRequest) -> tuple[str, str | None]:
    (tenant_id,) = _ids(request, "tenant_id")
    if "user_id" not in request.route_params:
        return tenant_id, None
    return tenant_id, _ids(request, "user_id")[0]
