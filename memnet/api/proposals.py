"""HTTP handlers for reviewing proposals (issue 15, capability 4; docs/proposals.md):
``GET …/users/{user_id}/proposals`` lists the queue, ``POST
…/proposals/{proposal_id}/{decision}`` approves, edits or rejects one."""

from __future__ import annotations

from memnet.api import parsing
from memnet.api.endpoint import RequestContext, endpoint
from memnet.api.http import ApiRequest, ApiResponse
from memnet.api.models.base import validated
from memnet.api.models.requests import ReviewBody
from memnet.domain.errors import BadRequest
from memnet.domain.proposals import PROPOSAL_ID
from memnet.services.proposals.review import DECISIONS, Review


@endpoint()
def list_proposals(request: ApiRequest, ctx: RequestContext) -> ApiResponse:
    tenant_id, user_id = parsing.path_id(request, "tenant_id"), parsing.path_id(request, "user_id")
    profile_id = parsing.optional_str(request.query, "profile_id")
    queue = ctx.services.proposals.pending(ctx.caller, tenant_id, user_id, profile_id)
    return ApiResponse.json(200, queue.as_json())


@endpoint()
def review_proposal(request: ApiRequest, ctx: RequestContext) -> ApiResponse:
    tenant_id, user_id = parsing.path_id(request, "tenant_id"), parsing.path_id(request, "user_id")
    profile_id = parsing.optional_str(request.query, "profile_id")
    decision = request.route_params.get("decision", "")
    if decision not in DECISIONS:
        raise _bad_path("decision", "decision must be approve, edit or reject.")
    proposal_id = request.route_params.get("proposal_id", "")
    if not PROPOSAL_ID.fullmatch(proposal_id):
        raise _bad_path("proposal_id", "proposal_id must be an id from the proposal queue.")
    body = _body(request, ctx.services.settings.max_body_bytes)
    if (decision == "edit") != ("candidate" in body.model_fields_set):
        raise BadRequest(
            "candidate is required to edit, and only then.",
            code="INVALID_FIELD",
            field="candidate",
            location=["body", "candidate"],
        )
    review = Review(proposal_id, decision, body.candidate, body.note)
    answer = ctx.services.proposals.review(ctx.caller, tenant_id, user_id, profile_id, review)
    headers = {"Idempotent-Replayed": "true"} if answer.replayed else {}
    return ApiResponse.json(200, answer.as_json(), headers)


def _body(request: ApiRequest, limit: int) -> ReviewBody:
    """The body, which approve and reject may leave out."""
    if not request.body:
        return validated(ReviewBody, {})
    _, body = parsing.model_body(request, limit, ReviewBody)
    return body


def _bad_path(name: str, message: str) -> BadRequest:
    return BadRequest(message, code="INVALID_FIELD", field=name, location=["path", name])
