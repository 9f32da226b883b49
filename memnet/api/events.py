"""HTTP handlers for event digests (spec 10.5, 10.6) and the reindex job (spec 20)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memnet import bootstrap
from memnet.api import parsing
from memnet.api.access import caller_of
from memnet.api.endpoint import endpoint
from memnet.api.errors import created_status
from memnet.api.http import ApiRequest, ApiResponse
from memnet.domain.errors import BadRequest
from memnet.domain.identifiers import SEGMENT, check_identifier
from memnet.domain.timestamps import format_timestamp, parse_timestamp
from memnet.ports import EventQuery

SEARCH_FIELDS = frozenset(
    {
        "text",
        "top_k",
        "time_range",
        "service_id",
        "project_id",
        "source_type",
        "keywords",
        "recency_half_life_days",
    }
)
MAX_QUERY_CHARS = 1000
MAX_TOP_K = 100
MAX_FILTER_VALUES = 20


def _scope(request: ApiRequest) -> tuple[str, str]:
    params = request.route_params
    return (
        check_identifier("tenant_id", params.get("tenant_id", "")),
        check_identifier("user_id", params.get("user_id", "")),
    )


@endpoint
def write_event(request: ApiRequest, request_id: str) -> ApiResponse:
    services = bootstrap.services()
    caller = caller_of(request)
    body = parsing.json_body(request, services.settings.max_body_bytes, None)  # model checks
    tenant_id, user_id = _scope(request)
    key = parsing.idempotency_key(request)
    fingerprint = parsing.fingerprint(request, caller.caller_id, body)
    response = services.events.write(caller, tenant_id, user_id, body, key, fingerprint)
    headers = {"Idempotent-Replayed": "true"} if response.get("replayed") else {}
    return ApiResponse.json(created_status(response), response["body"], headers)


@endpoint
def get_event(request: ApiRequest, request_id: str) -> ApiResponse:
    services = bootstrap.services()
    caller = caller_of(request)
    tenant_id, user_id = _scope(request)
    event_id = check_identifier("event_id", request.route_params.get("event_id", ""))
    return ApiResponse.json(200, services.events.get(caller, tenant_id, user_id, event_id))


@endpoint
def search_events(request: ApiRequest, request_id: str) -> ApiResponse:
    services = bootstrap.services()
    caller = caller_of(request, write=False)
    body = parsing.json_body(request, services.settings.max_body_bytes, SEARCH_FIELDS)
    tenant_id, user_id = _scope(request)
    query = _query(tenant_id, user_id, body)
    half_life = _half_life(body.get("recency_half_life_days"))
    return ApiResponse.json(200, services.events.search(caller, query, half_life))


@endpoint
def reindex(request: ApiRequest, request_id: str) -> ApiResponse:
    services = bootstrap.services()
    caller = caller_of(request, metered=False)
    body = parsing.json_body(
        request, services.settings.max_body_bytes, frozenset({"tenant_id", "user_id"})
    )
    tenant_id = parsing.optional_str(body, "tenant_id")
    user_id = parsing.optional_str(body, "user_id")
    if user_id is not None and tenant_id is None:
        raise BadRequest("user_id needs tenant_id.", code="INVALID_FIELD", field="user_id")
    return ApiResponse.json(202, services.events.reindex(caller, tenant_id, user_id))


def _query(tenant_id: str, user_id: str, body: dict[str, Any]) -> EventQuery:
    since, until = _time_range(body.get("time_range"))
    return EventQuery(
        tenant_id=tenant_id,
        user_id=user_id,
        text=_text(body.get("text")),
        top_k=_top_k(body.get("top_k", 10)),
        since=since,
        until=until,
        service_ids=_values(body, "service_id"),
        project_ids=_values(body, "project_id"),
        source_types=_values(body, "source_type"),
        keywords=_keywords(body.get("keywords")),
    )


def _bad(field: str, message: str) -> BadRequest:
    return BadRequest(f"{field}: {message}", code="INVALID_FIELD", field=field)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > MAX_QUERY_CHARS:
        raise _bad("text", f"must be a string of at most {MAX_QUERY_CHARS} characters")
    return value


def _top_k(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TOP_K:
        raise _bad("top_k", f"must be an integer from 1 to {MAX_TOP_K}")
    return value


def _time_range(value: Any) -> tuple[str | None, str | None]:
    """The bounds in the canonical UTC form (RFC 3339 only, as event timestamps)."""
    if value is None:
        return None, None
    if not isinstance(value, dict) or set(value) - {"from", "to"}:
        raise _bad("time_range", "is an object with 'from' and/or 'to'")
    since, until = (
        None if value.get(k) is None else parse_timestamp(value[k], f"time_range.{k}")
        for k in ("from", "to")
    )
    if since is not None and until is not None and since >= until:
        raise _bad("time_range", "'from' must be before 'to'")
    return _canonical(since), _canonical(until)


def _canonical(moment: datetime | None) -> str | None:
    return None if moment is None else format_timestamp(moment)


def _values(body: dict[str, Any], field: str) -> tuple[str, ...]:
    value = body.get(field)
    values = [value] if isinstance(value, str) else value
    if value is None:
        return ()
    if (
        not isinstance(values, list)
        or not 0 < len(values) <= MAX_FILTER_VALUES
        or not all(isinstance(v, str) and SEGMENT.fullmatch(v) for v in values)
    ):
        raise _bad(field, f"is an identifier or a list of 1-{MAX_FILTER_VALUES} identifiers")
    return tuple(values)


def _keywords(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if (
        not isinstance(value, list)
        or not 0 < len(value) <= MAX_FILTER_VALUES
        or not all(isinstance(v, str) and 0 < len(v) <= 64 for v in value)
    ):
        raise _bad("keywords", f"is a list of 1-{MAX_FILTER_VALUES} short strings")
    return tuple(value)


def _half_life(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 3650:
        raise _bad("recency_half_life_days", "must be a number of days in (0, 3650]")
    return float(value)
