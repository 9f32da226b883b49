"""The HTTP routes of ``function_app.py`` as data: for each function, its route template,
method, bodies, headers and statuses, from which :mod:`memnet.api.openapi` writes the
OpenAPI document. ``tests/unit/test_openapi.py`` checks that this table and the routes
the app registers are the same set, so neither can drift alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from memnet.api.models import requests as rq
from memnet.api.models import responses as rs

TENANT_USER = "v1/tenants/{tenant_id}/users/{user_id}"
DOCUMENT = TENANT_USER + "/documents/{namespace}/{*path}"
EVENTS = TENANT_USER + "/events"
SNAPSHOT = TENANT_USER + "/snapshots/{conversation_id}/{snapshot_id}"
HOLD = "v1/admin/tenants/{tenant_id}"

WRITE_HEADERS = ("Idempotency-Key", "If-Match", "If-None-Match")
WRITE_ERRORS = (404, 409, 412, 413, 415, 422, 428)


@dataclass(frozen=True)
class Route:
    """One function of ``function_app.py`` (``name``), or a variant of one that the same
    function serves under another documented path (``suffix``: ``:history``, ``:diff``;
    ``collection``: the route with its trailing catch-all empty, the path ending in the
    ``/`` before it, named ``operation``)."""

    name: str
    method: str
    route: str
    summary: str
    statuses: tuple[int, ...] = (200,)
    response: type[BaseModel] | None = None
    request: type[BaseModel] | None = None
    headers: tuple[str, ...] = ()
    query: tuple[str, ...] = ()
    errors: tuple[int, ...] = (404,)
    response_headers: tuple[str, ...] = ()
    authenticated: bool = True
    suffix: str = ""
    tags: tuple[str, ...] = ()
    collection: bool = False
    operation: str = ""
    media: tuple[str, ...] = ()  # a success that is a file, not JSON: its media types


def _document(method: str, name: str, request: type[BaseModel], summary: str) -> Route:
    return Route(
        name,
        method,
        DOCUMENT,
        summary,
        statuses=(200, 201),
        response=rs.DocumentWrite,
        request=request,
        headers=WRITE_HEADERS,
        errors=WRITE_ERRORS,
        response_headers=("ETag", "Idempotent-Replayed"),
        tags=("documents",),
    )


ROUTES: tuple[Route, ...] = (
    Route("get_health", "GET", "v1/health", "Liveness and readiness.", response=rs.Health,
          errors=(), authenticated=False, tags=("health",)),
    Route("get_health_details", "GET", "v1/health/details", "Backends, auth modes, profiles.",
          response=rs.HealthDetails, errors=(), tags=("health",)),
    Route("get_openapi", "GET", "v1/openapi.json", "This OpenAPI document.", errors=(),
          authenticated=False, tags=("health",)),
    Route("get_me", "GET", "v1/me", "Who the caller is: roles, tenants, usable profiles.",
          response=rs.Me, errors=(), tags=("callers",)),
    Route("get_profile", "GET", "v1/profiles/{profile_id}",
          "A profile as configured and its schemas (roles read, review or admin).",
          response=rs.ProfileRead, tags=("profiles",)),
    Route("get_document", "GET", DOCUMENT,
          "Read a document (spec 10.1), or with as_of a past version of it.",
          response=rs.DocumentReadOrVersion, query=("profile_id", "as_of"),
          errors=(404, 410), response_headers=("ETag",), tags=("documents",)),
    Route("get_document", "GET", DOCUMENT, "A document's changes, newest first.",
          response=rs.HistoryPage, query=("profile_id", "limit", "before"),
          suffix=":history", tags=("documents",)),
    Route("get_document", "GET", DOCUMENT, "Which changes produced the value at a path.",
          response=rs.WhyAnswer, query=("why_path", "as_of", "profile_id"), suffix=":why",
          tags=("documents",)),
    Route("get_document", "GET", DOCUMENT, "The RFC 6902 ops from one version to another.",
          response=rs.DocumentDiff, query=("profile_id", "from", "to"), errors=(404, 410),
          suffix=":diff", tags=("documents",)),
    Route("get_document", "GET", DOCUMENT, "A namespace's documents, in path order, paged.",
          response=rs.DocumentList,
          query=("profile_id", "page_limit", "continuation", "lookup", "value"),
          tags=("documents",), collection=True, operation="list_documents"),
    _document("PATCH", "patch_document", rq.PatchBody, "Apply a JSON Patch (spec 10.2)."),
    _document("PUT", "put_document", rq.PutBody, "Replace a document's content (spec 10.3)."),
    Route("post_document", "POST", DOCUMENT,
          "Write an earlier version back, or undo one change (binding's revert_roles).",
          response=rs.DocumentWrite, request=rq.RevertBody,
          headers=("Idempotency-Key", "If-Match"), errors=(*WRITE_ERRORS, 410),
          response_headers=("ETag", "Idempotent-Replayed"), suffix=":revert",
          tags=("documents",)),
    Route("assemble_context", "POST", TENANT_USER + "/context:assemble",
          "The memory to inject at conversation start (spec 10.4).", response=rs.Assembled,
          request=rq.AssembleBody, errors=(404, 413, 415), tags=("context",)),
    Route("write_event", "POST", EVENTS, "Store an event digest (spec 10.5).", statuses=(201, 200),
          response=rs.EventWritten, request=rq.EventBody, headers=("Idempotency-Key",),
          errors=(409, 413, 415), response_headers=("Idempotent-Replayed",), tags=("events",)),
    Route("get_event", "GET", EVENTS + "/{event_id}", "Read an event digest.",
          response=rs.EventRecord, tags=("events",)),
    Route("search_events", "POST", TENANT_USER + "/events:search",
          "Search event digests (spec 10.6).", response=rs.SearchResults,
          request=rq.SearchBody, errors=(413, 415), tags=("events",)),
    Route("reindex", "POST", "v1/admin/reindex", "Rebuild the search index (admin).",
          statuses=(202,), response=rs.ReindexQueued, request=rq.ReindexBody, errors=(413, 415),
          tags=("admin",)),
    Route("put_snapshot", "PUT", SNAPSHOT, "Store a transcript and queue its replay.",
          statuses=(202,), response=rs.ReplayStatus, request=rq.TranscriptBody,
          errors=(409, 413, 415), response_headers=("Location", "Idempotent-Replayed"),
          tags=("snapshots",)),
    Route("get_snapshot", "GET", SNAPSHOT, "The decrypted transcript.",
          response=rq.TranscriptBody, tags=("snapshots",)),
    Route("get_replay", "GET", SNAPSHOT + "/replay", "The replay's status.",
          response=rs.ReplayStatus, tags=("snapshots",)),
    Route("resolve_replay_patch", "POST", SNAPSHOT + "/replay/patches/{patch_index}/{action}",
          "Retry or discard a parked replay patch (admin).", response=rs.ReplayStatus,
          errors=(404, 409, 412, 422), tags=("snapshots",)),
    Route("list_unresolved_replays", "GET", TENANT_USER + "/replays/unresolved",
          "A user's replays with parked patches (admin).", response=rs.UnresolvedReplays,
          query=("limit",), tags=("snapshots",)),
    Route("redrive_replay", "POST", SNAPSHOT + "/replay/redrive",
          "Queue a failed replay again (admin).", statuses=(202,), response=rs.ReplayStatus,
          errors=(404, 409), response_headers=("Location",), tags=("snapshots",)),
    Route("forget_user", "DELETE", TENANT_USER, "Forget a user (spec 17).", statuses=(202,),
          response=rs.ForgetAccepted, errors=(409,), tags=("forgetting",)),
    Route("forget_status", "GET", TENANT_USER + "/forget", "A user's forget job.",
          response=rs.ForgetStatus, tags=("forgetting",)),
    Route("forget_conversation", "DELETE", TENANT_USER + "/conversations/{conversation_id}",
          "Forget one conversation.", statuses=(202,), response=rs.ForgetAccepted, errors=(409,),
          tags=("forgetting",)),
    Route("forget_conversation_status", "GET",
          TENANT_USER + "/forget/conversations/{conversation_id}",
          "A conversation's forget job.", response=rs.ForgetStatus, tags=("forgetting",)),
    Route("list_proposals", "GET", TENANT_USER + "/proposals",
          "The user's proposal queue (roles read, review or admin).",
          response=rs.ProposalQueue, query=("profile_id",), tags=("proposals",)),
    Route("review_proposal", "POST", TENANT_USER + "/proposals/{proposal_id}/{decision}",
          "Approve, edit or reject a proposal (roles review or admin).",
          response=rs.ProposalDecision, request=rq.ReviewBody, query=("profile_id",),
          errors=(404, 409, 413, 415, 422), response_headers=("Idempotent-Replayed",),
          tags=("proposals",)),
    Route("get_receipt", "GET", "v1/tenants/{tenant_id}/receipts/{receipt_id}",
          "A deletion receipt.", response=rs.Receipt, tags=("forgetting",)),
    Route("set_tenant_hold", "PUT", HOLD + "/hold", "Set the tenant's legal hold (admin).",
          response=rs.Hold, request=rq.HoldBody, errors=(413, 415), tags=("admin",)),
    Route("clear_tenant_hold", "DELETE", HOLD + "/hold", "Clear the tenant's legal hold.",
          response=rs.Hold, tags=("admin",)),
    Route("set_user_hold", "PUT", HOLD + "/users/{user_id}/hold",
          "Set a user's legal hold (admin).", response=rs.Hold, request=rq.HoldBody,
          errors=(413, 415), tags=("admin",)),
    Route("clear_user_hold", "DELETE", HOLD + "/users/{user_id}/hold",
          "Clear a user's legal hold.", response=rs.Hold, tags=("admin",)),
    Route("list_holds", "GET", HOLD + "/holds", "The tenant's legal holds (admin).",
          response=rs.Holds, errors=(), tags=("admin",)),
    # issue 27: listing what exists
    Route("list_events", "GET", EVENTS, "A user's events in event id order, paged by cursor.",
          response=rs.EventList, query=("inventory_limit", "after", "conversation_id"),
          errors=(), tags=("events",)),
    Route("list_snapshots", "GET", TENANT_USER + "/snapshots",
          "A user's snapshots and replay status, no content (snapshots or admin).",
          response=rs.SnapshotList, query=("inventory_limit", "after"), errors=(),
          tags=("snapshots",)),
    # issue 27: export
    Route("request_export", "POST", TENANT_USER, "Queue an export of the user's memory.",
          statuses=(202,), response=rs.ExportJob, query=("profile_id",), errors=(404, 405, 409),
          response_headers=("Location",), suffix=":export", operation="request_export",
          tags=("export",)),
    Route("get_export", "GET", TENANT_USER + "/exports/{export_id}",
          "An export's status and progress.", response=rs.ExportJob, tags=("export",)),
    Route("delete_export", "DELETE", TENANT_USER + "/exports/{export_id}",
          "Delete an export's archive.", response=rs.ExportDeleted, tags=("export",)),
    Route("get_export_file", "GET", TENANT_USER + "/exports/{export_id}/files/{name}",
          "One file of a finished export (manifest.json, a JSON Lines part, memory.md).",
          errors=(404, 409), tags=("export",),
          media=("application/json", "application/x-ndjson", "text/markdown")),
)  # fmt: skip
