"""HTTP handler for ``POST {document}:revert`` (issue 27; docs/api.md): the one POST the
document's Functions route takes."""

from __future__ import annotations

from memnet.api import parsing
from memnet.api.documents import HISTORY_SUFFIX, REVERT_SUFFIX, render_write
from memnet.api.endpoint import RequestContext, endpoint
from memnet.api.http import ApiRequest, ApiResponse
from memnet.api.models.requests import RevertBody
from memnet.domain.errors import BadRequest, MethodNotAllowed
from memnet.services.documents.revert import RevertCommand


@endpoint()
def post_document(request: ApiRequest, ctx: RequestContext) -> ApiResponse:
    """Parsed in the order a PATCH is (:func:`memnet.api.documents._write_command`):
    the route (405), the body, the path, the precondition (428), the key."""
    path = request.route_params.get("path", "")
    if not path.endswith(REVERT_SUFFIX):
        raise _not_postable(path)
    raw, body = parsing.model_body(request, ctx.services.settings.max_body_bytes, RevertBody)
    ref = parsing.document_ref(request, path.removesuffix(REVERT_SUFFIX))
    if_match, create = parsing.precondition(request)
    if create or if_match is None:
        raise BadRequest(
            "A revert changes an existing document: send If-Match, not If-None-Match.",
            code="INVALID_PRECONDITION",
            location=["header", "If-None-Match"],
        )
    command = RevertCommand(
        ref=ref,
        profile_id=body.profile_id,
        if_match=if_match,
        idempotency_key=parsing.idempotency_key(request),
        fingerprint=parsing.fingerprint(request, ctx.caller.caller_id, raw),
        request_id=ctx.request_id,
        to_change_id=body.to_change_id,
        undo_change_id=body.undo_change_id,
        note=body.reason,
    )
    return render_write(ctx.services.reverts.revert(ctx.caller, command), ctx.caller)


def _not_postable(path: str) -> MethodNotAllowed:
    if path.endswith(HISTORY_SUFFIX) or not path:
        return MethodNotAllowed("This resource is read-only.", allow="GET")
    return MethodNotAllowed(
        "A document takes POST only as {document}:revert.", allow="GET, PATCH, PUT"
    )
