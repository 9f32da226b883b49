"""HTTP handlers for conversation snapshots and their replay (spec 7.2, 13, 14).

``PUT .../snapshots/{conversation_id}/{snapshot_id}`` stores a transcript (encrypted)
and answers 202 with the replay's status and its URL; ``GET`` of the same path returns
the transcript to callers with the ``snapshots`` role; ``GET .../replay`` is the
replay's status; the admin routes retry or discard a parked patch and list a user's
unresolved replays.
"""

from __future__ import annotations

from typing import Any

from memnet.api import parsing
from memnet.api.endpoint import RequestContext, endpoint
from memnet.api.http import ApiRequest, ApiResponse
from memnet.domain import pointers
from memnet.domain.errors import BadRequest
from memnet.domain.layout import SnapshotRef
from memnet.services.replay.records import ReplayRecord

RECORD_FIELDS = (
    "replay_id",
    "tenant_id",
    "user_id",
    "conversation_id",
    "snapshot_id",
    "snapshot_uri",
    "status",
    "source",
    "uploaded_by",
    "profile_id",
    "extractor",
    "attempts",
    "created_at",
    "updated_at",
    "events",
    "changes",
    "rejected",
    "unresolved",
    "error",
)


def _ref(request: ApiRequest) -> SnapshotRef:
    names = ("tenant_id", "user_id", "conversation_id", "snapshot_id")
    return SnapshotRef(*(parsing.path_id(request, name) for name in names))


def status_url(ref: SnapshotRef) -> str:
    return (
        f"/v1/tenants/{ref.tenant_id}/users/{ref.user_id}/snapshots/"
        f"{ref.conversation_id}/{ref.snapshot_id}/replay"
    )


def view(record: ReplayRecord, ref: SnapshotRef, full: bool = True) -> dict[str, Any]:
    """The replay status as the API shows it: the record without its internal plan, the
    patches it planned (spec 9.3 records) under ``patches``, and its URL. Not ``full``
    (an uploader without the ``read`` role): its id, status and URL only."""
    if not full:
        return {
            "replay_id": record.replay_id,
            "status": record.status,
            "status_url": status_url(ref),
        }
    stored = record.as_json()
    body = {name: stored[name] for name in RECORD_FIELDS}
    body["patches"] = [p.as_json() for p in record.output.patches] if record.output else []
    body["status_url"] = status_url(ref)
    return body


@endpoint()
def put_snapshot(request: ApiRequest, ctx: RequestContext) -> ApiResponse:
    body = parsing.json_body(request, ctx.services.settings.max_body_bytes)  # the domain checks
    ref = _ref(request)
    created, record = ctx.services.snapshots.upload(ctx.caller, ref, body)
    headers = {"Location": status_url(ref)}
    if not created:
        headers["Idempotent-Replayed"] = "true"
    return ApiResponse.json(202, view(record, ref, ctx.caller.may_read()), headers)


@endpoint()
def get_snapshot(request: ApiRequest, ctx: RequestContext) -> ApiResponse:
    return ApiResponse.json(200, ctx.services.snapshots.read(ctx.caller, _ref(request)))


@endpoint()
def get_replay(request: ApiRequest, ctx: RequestContext) -> ApiResponse:
    ref = _ref(request)
    return ApiResponse.json(200, view(ctx.services.snapshots.status(ctx.caller, ref), ref))


@endpoint()
def resolve_patch(request: ApiRequest, ctx: RequestContext) -> ApiResponse:
    """``POST .../replay/patches/{patch_index}/{action}``: ``retry`` or ``discard``."""
    ref = _ref(request)
    action = request.route_params.get("action", "")
    if action not in ("retry", "discard"):
        raise BadRequest(
            "action must be retry or discard.",
            code="INVALID_ACTION",
            field="action",
            location=["path", "action"],
        )
    index = request.route_params.get("patch_index", "")
    if not pointers.is_digits(index) or len(index) > 4:
        raise BadRequest(
            "patch_index must be a small integer.",
            code="INVALID_FIELD",
            location=["path", "patch_index"],
        )
    record = ctx.services.replay.review.resolve(ctx.caller, ref, int(index), action)
    return ApiResponse.json(200, view(record, ref))


@endpoint()
def redrive(request: ApiRequest, ctx: RequestContext) -> ApiResponse:
    ref = _ref(request)
    record = ctx.services.replay.redrive(ctx.caller, ref)
    return ApiResponse.json(202, view(record, ref), {"Location": status_url(ref)})


@endpoint()
def list_unresolved(request: ApiRequest, ctx: RequestContext) -> ApiResponse:
    tenant_id, user_id = parsing.path_id(request, "tenant_id"), parsing.path_id(request, "user_id")
    limit = parsing.bounded_int(request.query, "limit", 100, 1000)
    found = ctx.services.replay.review.unresolved(ctx.caller, tenant_id, user_id, limit)
    replays = [view(r, r.ref) for r in found]
    return ApiResponse.json(200, {"replays": replays, "count": len(replays)})
