"""HTTP handlers listing what a user has (issue 27, item 7; docs/api.md
"Listing what exists"): ``GET .../events`` and ``GET .../snapshots``, paged by
an opaque ``after`` cursor."""

from __future__ import annotations

from dataclasses import asdict

from memnet.api import parsing
from memnet.api.endpoint import RequestContext, endpoint
from memnet.api.http import ApiRequest, ApiResponse

DEFAULT_LIMIT = 100
MAX_LIMIT = 500  # a page reads one blob per item: bounded well under a second


def _page(request: ApiRequest) -> tuple[str, str, int, str | None]:
    return (
        parsing.path_id(request, "tenant_id"),
        parsing.path_id(request, "user_id"),
        parsing.bounded_int(request.query, "limit", DEFAULT_LIMIT, MAX_LIMIT),
        request.query.get("after"),
    )


@endpoint()
def list_events(request: ApiRequest, ctx: RequestContext) -> ApiResponse:
    tenant_id, user_id, limit, after = _page(request)
    conversation_id = parsing.optional_str(request.query, "conversation_id")
    page = ctx.services.event_paging.list_events(
        ctx.caller, tenant_id, user_id, limit, after, conversation_id
    )
    return ApiResponse.json(200, page.as_json())


@endpoint()
def list_snapshots(request: ApiRequest, ctx: RequestContext) -> ApiResponse:
    tenant_id, user_id, limit, after = _page(request)
    page = ctx.services.snapshot_listing.list_snapshots(
        ctx.caller, tenant_id, user_id, limit, after
    )
    snapshots = [asdict(item) for item in page.snapshots]
    return ApiResponse.json(200, {"snapshots": snapshots, "after": page.after})
