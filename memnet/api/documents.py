"""HTTP handlers for documents (spec 10.1-10.3) and their history (``...json:history``)."""

from __future__ import annotations

import json

from memnet.api import listing, parsing
from memnet.api.endpoint import RequestContext, endpoint
from memnet.api.http import ApiRequest, ApiResponse
from memnet.api.models.requests import PatchBody, PutBody
from memnet.domain.audit_records import is_change_id
from memnet.domain.callers import Caller
from memnet.domain.document_model import Precondition, StoredDocument, WriteCommand
from memnet.domain.errors import BadRequest, MethodNotAllowed
from memnet.domain.timestamps import InvalidTimestamp, parse_timestamp
from memnet.services.documents.diffs import LATEST
from memnet.services.documents.idempotency import Response

HISTORY_SUFFIX = ":history"
WHY_SUFFIX = ":why"
DIFF_SUFFIX = ":diff"
REVERT_SUFFIX = ":revert"  # POST only (memnet.api.reverts)


@endpoint()
def get_document(request: ApiRequest, ctx: RequestContext) -> ApiResponse:
    path = request.route_params.get("path", "")
    if not path:
        return listing.list_documents(request, ctx)
    if path.endswith(HISTORY_SUFFIX):
        return _history(request, ctx, path.removesuffix(HISTORY_SUFFIX))
    if path.endswith(WHY_SUFFIX):
        return _why(request, ctx, path.removesuffix(WHY_SUFFIX))
    if path.endswith(DIFF_SUFFIX):
        return _diff(request, ctx, path.removesuffix(DIFF_SUFFIX))
    if path.endswith(REVERT_SUFFIX):
        raise MethodNotAllowed("A revert is a POST.", allow="POST")
    ref = parsing.document_ref(request, path)
    profile_id = parsing.optional_str(request.query, "profile_id")
    as_of = version_query(request, "as_of")
    if as_of is not None:
        version = ctx.services.documents.version(ctx.caller, ref, profile_id, as_of)
        return ApiResponse.json(200, version.as_json())
    found = ctx.services.documents.read(ctx.caller, ref, profile_id)
    return ApiResponse.encoded(200, _read_body(found), {"ETag": found.etag})


def _read_body(found: StoredDocument) -> bytes:
    """``{"etag", "document"}``, the document part as :meth:`StoredDocument.json_bytes`."""
    return b'{"etag":%s,"document":%s}' % (json.dumps(found.etag).encode(), found.json_bytes())


def version_query(request: ApiRequest, name: str) -> str | None:
    """A query parameter naming a version: a change id or an RFC 3339 instant."""
    value = request.query.get(name)
    if value is None or is_change_id(value):
        return value
    try:
        parse_timestamp(value, name)
    except InvalidTimestamp:
        raise BadRequest(
            f"{name} must be a change id or an RFC 3339 date-time.",
            code="INVALID_QUERY",
            field=name,
            location=["query", name],
        ) from None
    return value


def _diff(request: ApiRequest, ctx: RequestContext, path: str) -> ApiResponse:
    """``{document}:diff?from=<change id>&to=<change id|latest>`` (docs/api.md)."""
    ref = parsing.document_ref(request, path)
    profile_id = parsing.optional_str(request.query, "profile_id")
    older = change_id_query(request, "from", required=True)
    newer = change_id_query(request, "to", also=LATEST) or LATEST
    found = ctx.services.documents.diff(ctx.caller, ref, profile_id, str(older), newer)
    return ApiResponse.json(200, found.as_json())


def change_id_query(
    request: ApiRequest, name: str, *, required: bool = False, also: str | None = None
) -> str | None:
    """A query parameter naming a change by its id (or the word ``also``)."""
    value = request.query.get(name)
    if value is None and not required:
        return None
    if value is not None and value == also:
        return value
    if value is None or not is_change_id(value):
        spelled = "a change id" + (f" or {also}" if also else "")
        raise BadRequest(
            f"{name} must be {spelled}.",
            code="INVALID_QUERY",
            field=name,
            location=["query", name],
        )
    return value


def _history(request: ApiRequest, ctx: RequestContext, path: str) -> ApiResponse:
    services = ctx.services
    ref = parsing.document_ref(request, path)
    profile_id = parsing.optional_str(request.query, "profile_id")
    limit = parsing.bounded_int(request.query, "limit", services.settings.history_limit, 1000)
    before = change_id_query(request, "before")
    page = services.documents.history(ctx.caller, ref, profile_id, limit, before)
    return ApiResponse.json(200, page.as_json())


MAX_WHY_PATH_CHARS = 1024


def _why(request: ApiRequest, ctx: RequestContext, path: str) -> ApiResponse:
    """``:why?path=<JSON Pointer into the content>[&as_of=<version>]`` (docs/api.md)."""
    ref = parsing.document_ref(request, path)
    profile_id = parsing.optional_str(request.query, "profile_id")
    pointer = parsing.pointer_query(request.query, "path", MAX_WHY_PATH_CHARS)
    as_of = version_query(request, "as_of")
    found = ctx.services.documents.why(ctx.caller, ref, profile_id, pointer, as_of)
    return ApiResponse.json(200, found.as_json())


@endpoint()
def patch_document(request: ApiRequest, ctx: RequestContext) -> ApiResponse:
    command = _write_command(request, ctx, PatchBody)
    return render_write(ctx.services.documents.patch(ctx.caller, command), ctx.caller)


@endpoint()
def put_document(request: ApiRequest, ctx: RequestContext) -> ApiResponse:
    command = _write_command(request, ctx, PutBody)
    return render_write(ctx.services.documents.replace(ctx.caller, command), ctx.caller)


def _refuse_history(request: ApiRequest) -> None:
    """A ``:history`` path shares the document's Functions route, so its writes land here:
    405, as for any method a resource does not take; so does a namespace's listing (an
    empty path)."""
    path = request.route_params.get("path", "")
    if path.endswith((HISTORY_SUFFIX, WHY_SUFFIX)):
        raise MethodNotAllowed("A document's history is read-only.", allow="GET")
    if path.endswith(DIFF_SUFFIX):
        raise MethodNotAllowed("A diff of two versions is read-only.", allow="GET")
    if path.endswith(REVERT_SUFFIX):
        raise MethodNotAllowed("A revert is a POST.", allow="POST")
    if not path:
        raise MethodNotAllowed("A namespace's listing is read-only.", allow="GET")


def _write_command(
    request: ApiRequest, ctx: RequestContext, model: type[PatchBody] | type[PutBody]
) -> WriteCommand:
    """The write as the service takes it, in one pass over the request, each part checked
    once and in the order its errors are reported: the route (405), the body (413, 415,
    400 from its model, which parses the ops), the document's path, the preconditions
    (400, 428), the reason (403) and the idempotency key (400). ``raw`` (the body as sent) is
    fingerprinted, so a retry matches its first attempt whatever the models normalise."""
    _refuse_history(request)
    raw, body = parsing.model_body(request, ctx.services.settings.max_body_bytes, model)
    ref = parsing.document_ref(request, request.route_params.get("path", ""))
    if_match, create = parsing.precondition(request)
    parsing.check_reason(body.reason, ctx.caller.roles)
    key = parsing.idempotency_key(request)
    patch = body if isinstance(body, PatchBody) else None
    return WriteCommand(
        ref=ref,
        profile_id=body.profile_id,
        binding_id=body.binding_id,
        precondition=Precondition(if_match, create),
        idempotency_key=key,
        fingerprint=parsing.fingerprint(request, ctx.caller.caller_id, raw),
        reason=body.reason,
        request_id=ctx.request_id,
        evidence=raw.get("evidence"),
        confidence=patch.confidence if patch else None,
        ops=patch.ops if patch else [],
        content=None if patch else raw["content"],
        rebase=patch.rebase if patch else False,
    )


def render_write(response: Response, caller: Caller) -> ApiResponse:
    """The write's response; a caller without the ``read`` role gets no document."""
    body = response.body
    if not caller.may_read():
        body = {k: v for k, v in body.items() if k != "document"}
    headers = {"ETag": body["etag"]}
    if response.replayed:
        headers["Idempotent-Replayed"] = "true"
    return ApiResponse.json(response.status, body, headers)
