"""Azure Functions entry points (Python v2 model). Thin: each trigger adapts the request,
calls one handler in ``memnet.api`` with the process's services
(:func:`memnet.bootstrap.services`, built on first use), and renders the response.
Nothing heavy at import."""

from __future__ import annotations

from urllib.parse import urlsplit

import azure.functions as func
import azurefunctions.extensions.bindings.blob as blob

from memnet import bootstrap
from memnet.api import (
    console,
    context,
    documents,
    events,
    exports,
    governance,
    health,
    inventory,
    openapi,
    proposals,
    reverts,
    snapshots,
)
from memnet.api.endpoint import Endpoint, ServicesSource
from memnet.api.http import ApiRequest
from memnet.api.workers import (
    handle_compaction_job,
    handle_compaction_timer,
    handle_export_job,
    handle_export_poison,
    handle_forget_job,
    handle_forget_poison,
    handle_index_job,
    handle_replay_job,
    handle_replay_poison,
    handle_retention_sweep,
    handle_snapshot_blob,
)

app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

DOCUMENT_ROUTE = "v1/tenants/{tenant_id}/users/{user_id}/documents/{namespace}/{*path}"


def _call(
    handler: Endpoint, req: func.HttpRequest, services: ServicesSource = bootstrap.services
) -> func.HttpResponse:
    request = ApiRequest.of(
        req.method,
        urlsplit(req.url).path,
        req.route_params,
        dict(req.headers),
        dict(req.params),
        req.get_body(),
    )
    response = handler(request, services)
    return func.HttpResponse(response.body, status_code=response.status, headers=response.headers)


@app.route(route="console/{*path}", methods=["GET"])
def get_console(req: func.HttpRequest) -> func.HttpResponse:
    """The console (docs/console.md): its page and its versioned assets; not an API
    operation (it calls the public API like any client)."""
    return _call(console.get_console, req)


@app.route(route="v1/health", methods=["GET"])
def get_health(req: func.HttpRequest) -> func.HttpResponse:
    return _call(health.get_health, req)


@app.route(route="v1/health/details", methods=["GET"])
def get_health_details(req: func.HttpRequest) -> func.HttpResponse:
    return _call(health.get_health_details, req, bootstrap.services_or_cause)


@app.route(route="v1/openapi.json", methods=["GET"])
def get_openapi(req: func.HttpRequest) -> func.HttpResponse:
    """The OpenAPI 3.1 document of these routes; unauthenticated, as /v1/health."""
    return _call(openapi.get_openapi, req)


@app.route(route="v1/me", methods=["GET"])
def get_me(req: func.HttpRequest) -> func.HttpResponse:
    """Who the caller is: its roles, tenants and the profiles it may use (issue 28)."""
    return _call(console.get_me, req)


@app.route(route="v1/profiles/{profile_id}", methods=["GET"])
def get_profile(req: func.HttpRequest) -> func.HttpResponse:
    """A profile as configured and the schemas its bindings name."""
    return _call(console.get_profile, req)


@app.route(route=DOCUMENT_ROUTE, methods=["GET"])
def get_document(req: func.HttpRequest) -> func.HttpResponse:
    """Read a document (spec 10.1); a path ending in ``:history`` lists its changes, one
    ending in ``:why`` tells which changes produced a value."""
    return _call(documents.get_document, req)


@app.route(route=DOCUMENT_ROUTE, methods=["PATCH"])
def patch_document(req: func.HttpRequest) -> func.HttpResponse:
    return _call(documents.patch_document, req)


@app.route(route=DOCUMENT_ROUTE, methods=["PUT"])
def put_document(req: func.HttpRequest) -> func.HttpResponse:
    return _call(documents.put_document, req)


@app.route(route=DOCUMENT_ROUTE, methods=["POST"])
def post_document(req: func.HttpRequest) -> func.HttpResponse:
    """``{document}:revert``: write an earlier version back, or undo one change."""
    return _call(reverts.post_document, req)


@app.route(route="v1/tenants/{tenant_id}/users/{user_id}/context:assemble", methods=["POST"])
def assemble_context(req: func.HttpRequest) -> func.HttpResponse:
    """The memory to inject at conversation start (spec 10.4, 11)."""
    return _call(context.assemble_context, req)


EVENTS_ROUTE = "v1/tenants/{tenant_id}/users/{user_id}/events"


@app.route(route=EVENTS_ROUTE, methods=["POST"])
def write_event(req: func.HttpRequest) -> func.HttpResponse:
    """Store an event digest and index it (spec 10.5)."""
    return _call(events.write_event, req)


@app.route(route=EVENTS_ROUTE + "/{event_id}", methods=["GET"])
def get_event(req: func.HttpRequest) -> func.HttpResponse:
    return _call(events.get_event, req)


@app.route(route="v1/tenants/{tenant_id}/users/{user_id}/events:search", methods=["POST"])
def search_events(req: func.HttpRequest) -> func.HttpResponse:
    """Search a user's event digests (spec 10.6)."""
    return _call(events.search_events, req)


@app.route(route="v1/admin/reindex", methods=["POST"])
def reindex(req: func.HttpRequest) -> func.HttpResponse:
    """Rebuild the search index from the event blobs, through the queue (spec 20)."""
    return _call(events.reindex, req)


@app.queue_trigger(arg_name="msg", queue_name="memnet-index", connection="MEMNET_QUEUE")
def index_events(msg: func.QueueMessage) -> None:
    """The index worker: one index, delete or promote job per message; raising retries it."""
    handle_index_job(bootstrap.services(), msg.get_body().decode("utf-8"))


SNAPSHOT_ROUTE = "v1/tenants/{tenant_id}/users/{user_id}/snapshots/{conversation_id}/{snapshot_id}"


@app.route(route=SNAPSHOT_ROUTE, methods=["PUT"])
def put_snapshot(req: func.HttpRequest) -> func.HttpResponse:
    """Store a conversation snapshot, encrypted, and queue its replay (spec 13)."""
    return _call(snapshots.put_snapshot, req)


@app.route(route=SNAPSHOT_ROUTE, methods=["GET"])
def get_snapshot(req: func.HttpRequest) -> func.HttpResponse:
    return _call(snapshots.get_snapshot, req)


@app.route(route=SNAPSHOT_ROUTE + "/replay", methods=["GET"])
def get_replay(req: func.HttpRequest) -> func.HttpResponse:
    return _call(snapshots.get_replay, req)


@app.route(route=SNAPSHOT_ROUTE + "/replay/patches/{patch_index}/{action}", methods=["POST"])
def resolve_replay_patch(req: func.HttpRequest) -> func.HttpResponse:
    """Admin review of a parked replay patch: retry on the latest version, or discard."""
    return _call(snapshots.resolve_patch, req)


@app.route(route="v1/tenants/{tenant_id}/users/{user_id}/replays/unresolved", methods=["GET"])
def list_unresolved_replays(req: func.HttpRequest) -> func.HttpResponse:
    return _call(snapshots.list_unresolved, req)


@app.queue_trigger(arg_name="msg", queue_name="memnet-replay", connection="MEMNET_QUEUE")
def replay_snapshot(msg: func.QueueMessage) -> None:
    """The replay worker: one snapshot (or one parked patch's retry) per message."""
    handle_replay_job(bootstrap.services(), msg.get_body().decode("utf-8"))


@app.queue_trigger(arg_name="msg", queue_name="memnet-replay-poison", connection="MEMNET_QUEUE")
def replay_gave_up(msg: func.QueueMessage) -> None:
    """A replay message that failed every delivery: its replay is recorded as failed
    (or its parked patch left for review), so no status says running for ever."""
    handle_replay_poison(bootstrap.services(), msg.get_body().decode("utf-8"))


@app.route(route=SNAPSHOT_ROUTE + "/replay/redrive", methods=["POST"])
def redrive_replay(req: func.HttpRequest) -> func.HttpResponse:
    """Admin: queue a failed replay again."""
    return _call(snapshots.redrive, req)


@app.blob_trigger(
    arg_name="client",
    path="%MEMNET_BLOB_CONTAINER%/tenants/{tenant_id}/users/{user_id}/snapshots/{conversation_id}/{snapshot_id}.json",
    connection="MEMNET_BLOB",
    source=func.BlobSource.EVENT_GRID,
)
def snapshot_written(client: blob.BlobClient) -> None:
    """A snapshot written straight to storage starts the same replay (deduplicated with
    the upload route on the snapshot id). Event Grid source, as Flex Consumption needs.
    Typed as the SDK's client, the trigger is bound without the blob's content: only the
    names are read here (no I/O); the replay worker reads the snapshot itself."""
    handle_snapshot_blob(bootstrap.services(), client.container_name, client.blob_name)


# -- forgetting (spec 17; docs/forgetting.md) ------------------------------------------------

USER_ROUTE = "v1/tenants/{tenant_id}/users/{user_id}"


@app.route(route=USER_ROUTE, methods=["DELETE"])
def forget_user(req: func.HttpRequest) -> func.HttpResponse:
    """Forget a user: 202 with the job; writes are refused from now on (a tombstone)."""
    return _call(governance.forget_user, req)


@app.route(route=USER_ROUTE + "/forget", methods=["GET"])
def forget_status(req: func.HttpRequest) -> func.HttpResponse:
    return _call(governance.forget_status, req)


@app.route(route=USER_ROUTE + "/conversations/{conversation_id}", methods=["DELETE"])
def forget_conversation(req: func.HttpRequest) -> func.HttpResponse:
    """Forget one conversation: its snapshots and events, and what was learned from it."""
    return _call(governance.forget_conversation, req)


@app.route(route=USER_ROUTE + "/forget/conversations/{conversation_id}", methods=["GET"])
def forget_conversation_status(req: func.HttpRequest) -> func.HttpResponse:
    return _call(governance.forget_conversation_status, req)


@app.route(route=USER_ROUTE + "/proposals", methods=["GET"])
def list_proposals(req: func.HttpRequest) -> func.HttpResponse:
    """The user's proposal queue: each pending item of the profile's pending sections."""
    return _call(proposals.list_proposals, req)


@app.route(route=USER_ROUTE + "/proposals/{proposal_id}/{decision}", methods=["POST"])
def review_proposal(req: func.HttpRequest) -> func.HttpResponse:
    """Approve, edit or reject one proposal (roles review or admin)."""
    return _call(proposals.review_proposal, req)


@app.route(route="v1/tenants/{tenant_id}/receipts/{receipt_id}", methods=["GET"])
def get_receipt(req: func.HttpRequest) -> func.HttpResponse:
    """A deletion receipt: kinds, counts, times, who asked, hashes of names; no content."""
    return _call(governance.get_receipt, req)


@app.queue_trigger(arg_name="msg", queue_name="memnet-forget", connection="MEMNET_QUEUE")
def forget_worker(msg: func.QueueMessage) -> None:
    """One bounded invocation of a forget job; it queues itself again until done."""
    handle_forget_job(bootstrap.services(), msg.get_body().decode("utf-8"))


@app.queue_trigger(arg_name="msg", queue_name="memnet-forget-poison", connection="MEMNET_QUEUE")
def forget_gave_up(msg: func.QueueMessage) -> None:
    handle_forget_poison(bootstrap.services(), msg.get_body().decode("utf-8"))


HOLD_ROUTE = "v1/admin/tenants/{tenant_id}"


@app.route(route=HOLD_ROUTE + "/hold", methods=["PUT"])
def set_tenant_hold(req: func.HttpRequest) -> func.HttpResponse:
    """Admin: set a legal hold on the tenant (held data survives sweeps and forget)."""
    return _call(governance.set_hold, req)


@app.route(route=HOLD_ROUTE + "/hold", methods=["DELETE"])
def clear_tenant_hold(req: func.HttpRequest) -> func.HttpResponse:
    return _call(governance.clear_hold, req)


@app.route(route=HOLD_ROUTE + "/users/{user_id}/hold", methods=["PUT"])
def set_user_hold(req: func.HttpRequest) -> func.HttpResponse:
    return _call(governance.set_hold, req)


@app.route(route=HOLD_ROUTE + "/users/{user_id}/hold", methods=["DELETE"])
def clear_user_hold(req: func.HttpRequest) -> func.HttpResponse:
    return _call(governance.clear_hold, req)


@app.route(route=HOLD_ROUTE + "/holds", methods=["GET"])
def list_holds(req: func.HttpRequest) -> func.HttpResponse:
    return _call(governance.list_holds, req)


@app.timer_trigger(arg_name="timer", schedule="%MEMNET_SWEEP_SCHEDULE%", run_on_startup=False)
def retention_sweep(timer: func.TimerRequest) -> None:
    """The retention sweep (docs/retention.md): one bounded, resumable run per tick."""
    handle_retention_sweep(bootstrap.services())


# -- compaction and freshness (docs/compaction.md) -------------------------------------------


@app.queue_trigger(arg_name="msg", queue_name="memnet-compact", connection="MEMNET_QUEUE")
def compaction_worker(msg: func.QueueMessage) -> None:
    """Compact one document that a write took over its targets."""
    handle_compaction_job(bootstrap.services(), msg.get_body().decode("utf-8"))


@app.timer_trigger(arg_name="timer", schedule="%MEMNET_COMPACTION_SCHEDULE%", run_on_startup=False)
def compaction_timer(timer: func.TimerRequest) -> None:
    """Freshness and compaction of every document: one bounded, resumable run per tick."""
    handle_compaction_timer(bootstrap.services())


# -- looking back, undoing, taking it with you (issue 27) --------------------------------------


@app.route(route=EVENTS_ROUTE, methods=["GET"])
def list_events(req: func.HttpRequest) -> func.HttpResponse:
    """A user's events, paged by a stable cursor (not by search)."""
    return _call(inventory.list_events, req)


@app.route(route="v1/tenants/{tenant_id}/users/{user_id}/snapshots", methods=["GET"])
def list_snapshots(req: func.HttpRequest) -> func.HttpResponse:
    """A user's snapshots: ids, time stored, size, replay status; never content."""
    return _call(inventory.list_snapshots, req)


@app.route(route=USER_ROUTE, methods=["POST"])
def request_export(req: func.HttpRequest) -> func.HttpResponse:
    """``POST …/users/{user_id}:export``: queue an export of the user's memory (202)."""
    return _call(exports.request_export, req)


@app.route(route=USER_ROUTE + "/exports/{export_id}", methods=["GET"])
def get_export(req: func.HttpRequest) -> func.HttpResponse:
    return _call(exports.get_export, req)


@app.route(route=USER_ROUTE + "/exports/{export_id}", methods=["DELETE"])
def delete_export(req: func.HttpRequest) -> func.HttpResponse:
    return _call(exports.delete_export, req)


@app.route(route=USER_ROUTE + "/exports/{export_id}/files/{name}", methods=["GET"])
def get_export_file(req: func.HttpRequest) -> func.HttpResponse:
    """One file of a finished export's archive (manifest.json, a part, memory.md)."""
    return _call(exports.get_export_file, req)


@app.queue_trigger(arg_name="msg", queue_name="memnet-export", connection="MEMNET_QUEUE")
def export_worker(msg: func.QueueMessage) -> None:
    """Write one export's archive, part by part."""
    handle_export_job(bootstrap.services(), msg.get_body().decode("utf-8"))


@app.queue_trigger(arg_name="msg", queue_name="memnet-export-poison", connection="MEMNET_QUEUE")
def export_gave_up(msg: func.QueueMessage) -> None:
    handle_export_poison(bootstrap.services(), msg.get_body().decode("utf-8"))


# -- MCP tools (docs/mcp.md) -------------------------------------------------------------------
# Served by the Azure Functions MCP extension at /runtime/webhooks/mcp (locally by funchost).
# Each tool acts as the caller whose headers the MCP request carries.

from memnet.api import tools  # noqa: E402 - the MCP section is kept whole at the end of the file


def _tool(spec: tools.ToolSpec) -> dict[str, str]:
    return {
        "arg_name": "context",
        "tool_name": spec.name,
        "description": spec.description,
        "tool_properties": spec.properties_json(),
    }


@app.mcp_tool_trigger(**_tool(tools.SPECS["remember"]))
def mcp_remember(context: str) -> str:
    """An event digest, and optionally a memory item through the PATCH gate."""
    return tools.call("remember", context, bootstrap.services)


@app.mcp_tool_trigger(**_tool(tools.SPECS["recall"]))
def mcp_recall(context: str) -> str:
    """Context assembly and event search."""
    return tools.call("recall", context, bootstrap.services)


@app.mcp_tool_trigger(**_tool(tools.SPECS["forget"]))
def mcp_forget(context: str) -> str:
    """Forget one conversation, or report how its forget is going."""
    return tools.call("forget", context, bootstrap.services)
