"""HTTP handler for ``POST .../context:assemble`` (spec 10.4); the body is
:class:`~memnet.api.models.requests.AssembleBody`."""

from __future__ import annotations

from memnet.api import parsing
from memnet.api.endpoint import RequestContext, endpoint
from memnet.api.http import ApiRequest, ApiResponse
from memnet.api.models.requests import AssembleBody
from memnet.services.context.assembly import AssembleRequest


@endpoint(write=False)
def assemble_context(request: ApiRequest, ctx: RequestContext) -> ApiResponse:
    _, body = parsing.model_body(request, ctx.services.settings.max_body_bytes, AssembleBody)
    assembled = ctx.services.context.assemble(ctx.caller, _request(request, body))
    return ApiResponse.json(200, assembled.as_json())


def _request(request: ApiRequest, body: AssembleBody) -> AssembleRequest:
    hint = body.conversation_hint
    return AssembleRequest(
        tenant_id=parsing.path_id(request, "tenant_id"),
        user_id=parsing.path_id(request, "user_id"),
        profile_id=body.profile_id,
        hint_text=(hint.text or "") if hint else "",
        project_id=hint.project_id if hint else None,
        max_docs=body.max_docs,
        max_chars_total=body.max_chars_total,
        debug=body.debug,
        render=body.render,
        provenance=body.provenance,
    )
