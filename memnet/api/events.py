"""HTTP handlers for event digests (spec 10.5, 10.6) and the reindex job (spec 20)."""

from __future__ import annotations

from memnet.api import parsing
from memnet.api.endpoint import RequestContext, endpoint
from memnet.api.http import ApiRequest, ApiResponse
from memnet.api.models.requests import ReindexBody, SearchBody
from memnet.domain.callers import Caller
from memnet.domain.errors import BadRequest
from memnet.domain.ranking import Ranking
from memnet.ports import EventQuery
from memnet.services.profiles.registry import ProfileRegistry


def _scope(request: ApiRequest) -> tuple[str, str]:
    return parsing.path_id(request, "tenant_id"), parsing.path_id(request, "user_id")


@endpoint()
def write_event(request: ApiRequest, ctx: RequestContext) -> ApiResponse:
    body = parsing.json_body(request, ctx.services.settings.max_body_bytes)  # the domain checks
    tenant_id, user_id = _scope(request)
    key = parsing.idempotency_key(request)
    fingerprint = parsing.fingerprint(request, ctx.caller.caller_id, body)
    response = ctx.services.events.write(ctx.caller, tenant_id, user_id, body, key, fingerprint)
    headers = {"Idempotent-Replayed": "true"} if response.replayed else {}
    return ApiResponse.json(response.status, response.body, headers)


@endpoint()
def get_event(request: ApiRequest, ctx: RequestContext) -> ApiResponse:
    tenant_id, user_id = _scope(request)
    event_id = parsing.path_id(request, "event_id")
    event = ctx.services.events.get(ctx.caller, tenant_id, user_id, event_id)
    return ApiResponse.json(200, event.as_json())


@endpoint(write=False)
def search_events(request: ApiRequest, ctx: RequestContext) -> ApiResponse:
    _, body = parsing.model_body(request, ctx.services.settings.max_body_bytes, SearchBody)
    tenant_id, user_id = _scope(request)
    query = _query(tenant_id, user_id, body)
    half_life = body.recency_half_life_days
    registry = ctx.services.registry
    ranking = _ranking(registry, ctx.caller, body)
    weight = _dense_weight(registry, ctx.caller, body)
    found = ctx.services.events.search(ctx.caller, query, half_life, ranking, weight)
    return ApiResponse.json(200, found.as_json())


def _ranking(registry: ProfileRegistry, caller: Caller, body: SearchBody) -> Ranking | None:
    """The request's ``ranking``; else, unless the request asks for the plain recency
    decay, its profile's ``search_rules.ranking`` (the named profile, or the caller's
    only one); else none (the index's order)."""
    if body.ranking is not None:
        if body.recency_half_life_days is not None:
            raise _bad_ranking("send ranking or recency_half_life_days, not both.")
        if body.ranking.relevance + body.ranking.importance + body.ranking.recency <= 0:
            raise _bad_ranking("at least one ranking weight must be above 0.")
        return Ranking.of(body.ranking.model_dump())
    if body.recency_half_life_days is not None:
        return None
    if body.profile_id is None and caller.default_profile(registry.profile_ids()) is None:
        return None  # several profiles and none named: no profile's defaults apply
    return registry.for_caller(caller, body.profile_id).ranking


def _dense_weight(registry: ProfileRegistry, caller: Caller, body: SearchBody) -> float | None:
    """The request's ``dense_weight``; else its profile's ``search_rules.dense_weight``
    (the profile chosen as for ranking); else None (the service's setting)."""
    if body.dense_weight is not None:
        return float(body.dense_weight)
    if body.profile_id is None and caller.default_profile(registry.profile_ids()) is None:
        return None
    return registry.for_caller(caller, body.profile_id).dense_weight


def _bad_ranking(message: str) -> BadRequest:
    return BadRequest(message, code="INVALID_FIELD", field="ranking", location=["body", "ranking"])


@endpoint(metered=False)
def reindex(request: ApiRequest, ctx: RequestContext) -> ApiResponse:
    _, body = parsing.model_body(request, ctx.services.settings.max_body_bytes, ReindexBody)
    if body.user_id is not None and body.tenant_id is None:
        raise BadRequest(
            "user_id needs tenant_id.",
            code="INVALID_FIELD",
            field="user_id",
            location=["body", "user_id"],
        )
    receipt = ctx.services.events.reindex(ctx.caller, body.tenant_id, body.user_id)
    return ApiResponse.json(202, receipt.as_json())


def _query(tenant_id: str, user_id: str, body: SearchBody) -> EventQuery:
    window = body.time_range
    return EventQuery(
        tenant_id=tenant_id,
        user_id=user_id,
        text=body.text or "",
        top_k=body.top_k,
        since=window.from_ if window else None,
        until=window.to if window else None,
        service_ids=tuple(body.service_id or ()),
        project_ids=tuple(body.project_id or ()),
        source_types=tuple(body.source_type or ()),
        keywords=tuple(body.keywords or ()),
    )
