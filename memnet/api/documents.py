"""HTTP handlers for documents (spec 10.1-10.3) and their history (``...json:history``)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from memnet import bootstrap
from memnet.api import parsing
from memnet.api.access import caller_of
from memnet.api.endpoint import endpoint
from memnet.api.errors import created_status
from memnet.api.http import ApiRequest, ApiResponse
from memnet.domain.callers import Caller
from memnet.domain.document_model import Precondition, StoredDocument, WriteCommand
from memnet.domain.errors import BadRequest
from memnet.domain.patching import parse_ops
from memnet.services.idempotency import Response

HISTORY_SUFFIX = ":history"
CHANGE_ID = re.compile(r"chg_[0-9a-f]{28}")
PATCH_FIELDS = frozenset(
    {"profile_id", "binding_id", "ops", "reason", "evidence", "confidence", "rebase"}
)
PUT_FIELDS = frozenset({"profile_id", "binding_id", "content", "reason", "evidence"})


def _caller(request: ApiRequest) -> Caller:
    return caller_of(request)


@endpoint
def get_document(request: ApiRequest, request_id: str) -> ApiResponse:
    caller = _caller(request)
    path = request.route_params.get("path", "")
    if path.endswith(HISTORY_SUFFIX):
        return _history(request, caller, path.removesuffix(HISTORY_SUFFIX))
    ref = parsing.document_ref(request, path)
    profile_id = parsing.optional_str(request.query, "profile_id")
    found = bootstrap.services().documents.read(caller, ref, profile_id)
    return ApiResponse.encoded(200, _read_body(found), {"ETag": found.etag})


def _read_body(found: StoredDocument) -> bytes:
    """``{"etag", "document"}``. A document stored by the service is its compact
    serialisation, parsed already (so valid JSON): those bytes are the document part,
    rather than serialising the parsed document again."""
    if found.data.startswith(b'{"doc_id":'):
        return b'{"etag":%s,"document":%s}' % (json.dumps(found.etag).encode(), found.data)
    return ApiResponse.json(200, {"etag": found.etag, "document": found.document}).body


def _history(request: ApiRequest, caller: Caller, path: str) -> ApiResponse:
    services = bootstrap.services()
    ref = parsing.document_ref(request, path)
    profile_id = parsing.optional_str(request.query, "profile_id")
    limit = parsing.bounded_int(request.query, "limit", services.settings.history_limit, 1000)
    before = request.query.get("before")
    if before is not None and not CHANGE_ID.fullmatch(before):
        raise BadRequest("before must be a change id.", code="INVALID_QUERY", field="before")
    page = services.documents.history(caller, ref, profile_id, limit, before)
    return ApiResponse.json(200, page)


@endpoint
def patch_document(request: ApiRequest, request_id: str) -> ApiResponse:
    caller = _caller(request)
    body = parsing.json_body(request, _limit(), PATCH_FIELDS)
    command = _command(request, caller, body, request_id, "live_update")
    if "ops" not in body:
        raise_missing("ops")
    rebase = body.get("rebase", False)
    if not isinstance(rebase, bool):
        raise BadRequest("rebase must be true or false.", code="INVALID_FIELD", field="rebase")
    command = _with(command, ops=parse_ops(body["ops"]), rebase=rebase)
    return _render(bootstrap.services().documents.patch(caller, command), caller)


@endpoint
def put_document(request: ApiRequest, request_id: str) -> ApiResponse:
    caller = _caller(request)
    body = parsing.json_body(request, _limit(), PUT_FIELDS)
    command = _command(request, caller, body, request_id, "admin_migration")
    if not isinstance(body.get("content"), dict):
        raise_missing("content")
    command = _with(command, content=body["content"])
    return _render(bootstrap.services().documents.replace(caller, command), caller)


def _command(
    request: ApiRequest, caller: Caller, body: dict[str, Any], request_id: str, default_reason: str
) -> WriteCommand:
    ref = parsing.document_ref(request, request.route_params.get("path", ""))
    if_match, create = parsing.precondition(request)
    reason = parsing.reason(body, default_reason)
    parsing.check_reason(reason, caller.roles)
    return WriteCommand(
        ref=ref,
        profile_id=parsing.optional_str(body, "profile_id"),
        binding_id=parsing.optional_str(body, "binding_id"),
        precondition=Precondition(if_match, create),
        idempotency_key=parsing.idempotency_key(request),
        fingerprint=parsing.fingerprint(request, caller.caller_id, body),
        reason=reason,
        request_id=request_id,
        evidence=parsing.evidence(body),
        confidence=parsing.confidence(body),
    )


def _with(command: WriteCommand, **changes: Any) -> WriteCommand:
    return replace(command, **changes)


def raise_missing(name: str) -> None:
    raise BadRequest(f"Body needs {name!r}.", code="MISSING_FIELD", field=name)


def _limit() -> int:
    return bootstrap.services().settings.max_body_bytes


def _render(response: Response, caller: Caller) -> ApiResponse:
    """The write's response; a caller without the ``read`` role gets no document."""
    body = response["body"]
    if not caller.may_read():
        body = {k: v for k, v in body.items() if k != "document"}
    headers = {"ETag": body["etag"]}
    if response.get("replayed"):
        headers["Idempotent-Replayed"] = "true"
    return ApiResponse.json(created_status(response), body, headers)
