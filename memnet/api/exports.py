"""HTTP handlers of a user's export (issue 27, item 5; docs/export.md, docs/api.md
"Export"): ``POST …/users/{user_id}:export`` queues the job (202 and its status URL),
``GET …/exports/{export_id}`` is its status, ``GET …/exports/{export_id}/files/{name}``
serves one file of the archive, ``DELETE …/exports/{export_id}`` deletes it.

The ``:export`` suffix shares the user's Functions route (``users/{user_id}``, whose
DELETE forgets the user): the parameter then ends in ``:export``, as a document's
``:history`` ends its path."""

from __future__ import annotations

from memnet.api import parsing
from memnet.api.endpoint import RequestContext, endpoint
from memnet.api.http import ApiRequest, ApiResponse
from memnet.domain.errors import BadRequest, MethodNotAllowed
from memnet.domain.identifiers import check_identifier

EXPORT_SUFFIX = ":export"


def refuse_export(request: ApiRequest) -> None:
    """A ``…:export`` path shares the user's Functions route, so its DELETE lands in the
    forget: 405, as a method the export does not take."""
    if request.route_params.get("user_id", "").endswith(EXPORT_SUFFIX):
        raise MethodNotAllowed("An export is asked for with POST.", allow="POST")


def _user_of_export(request: ApiRequest) -> tuple[str, str]:
    raw = request.route_params.get("user_id", "")
    if not raw.endswith(EXPORT_SUFFIX):
        raise MethodNotAllowed(
            "A user is forgotten with DELETE, exported with POST …:export.", allow="DELETE"
        )
    try:
        user_id = check_identifier("user_id", raw.removesuffix(EXPORT_SUFFIX))
    except BadRequest as error:
        raise parsing.located(error, "path", "user_id") from None
    return parsing.path_id(request, "tenant_id"), user_id


def _export(request: ApiRequest) -> tuple[str, str, str]:
    return (
        parsing.path_id(request, "tenant_id"),
        parsing.path_id(request, "user_id"),
        parsing.path_id(request, "export_id"),
    )


@endpoint(write=False)
def request_export(request: ApiRequest, ctx: RequestContext) -> ApiResponse:
    tenant_id, user_id = _user_of_export(request)
    profile_id = parsing.optional_str(request.query, "profile_id")
    job = ctx.services.exports.request(ctx.caller, tenant_id, user_id, profile_id)
    return ApiResponse.json(202, job, {"Location": job["status_url"]})


@endpoint()
def get_export(request: ApiRequest, ctx: RequestContext) -> ApiResponse:
    return ApiResponse.json(200, ctx.services.exports.status(ctx.caller, *_export(request)))


@endpoint()
def get_export_file(request: ApiRequest, ctx: RequestContext) -> ApiResponse:
    name = parsing.path_id(request, "name")
    found = ctx.services.exports.file(ctx.caller, *_export(request), name)
    disposition = f'attachment; filename="{name}"'  # a path id: no quote or control character
    return ApiResponse(
        200, found.data, {"Content-Type": found.content_type, "Content-Disposition": disposition}
    )


@endpoint(write=False)
def delete_export(request: ApiRequest, ctx: RequestContext) -> ApiResponse:
    tenant_id, user_id, export_id = _export(request)
    ctx.services.exports.delete(ctx.caller, tenant_id, user_id, export_id)
    return ApiResponse.json(200, {"export_id": export_id, "deleted": True})
