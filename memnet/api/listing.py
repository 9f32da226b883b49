"""HTTP handler for listing a namespace's documents: ``GET …/documents/{namespace}/``
(issue 15, capability 2; docs/api.md). The Functions route is the document's
(``documents/{namespace}/{*path}``): its catch-all matches the empty string, and
:func:`memnet.api.documents.get_document` hands an empty path here."""

from __future__ import annotations

import re
from dataclasses import asdict

from memnet.api import parsing
from memnet.api.endpoint import RequestContext
from memnet.api.http import ApiRequest, ApiResponse
from memnet.domain.errors import BadRequest
from memnet.services.documents.listing import Lookup, NamespaceRef

DEFAULT_LIMIT = 50
MAX_LIMIT = 100  # a page costs one read per document: bounded well under a second


def list_documents(request: ApiRequest, ctx: RequestContext) -> ApiResponse:
    where = NamespaceRef(
        parsing.path_id(request, "tenant_id"),
        parsing.path_id(request, "user_id"),
        parsing.path_id(request, "namespace"),
    )
    profile_id = parsing.optional_str(request.query, "profile_id")
    limit = parsing.bounded_int(request.query, "limit", DEFAULT_LIMIT, MAX_LIMIT)
    page = ctx.services.listing.list_documents(
        ctx.caller, where, profile_id, limit, request.query.get("continuation"), _lookup(request)
    )
    documents = [asdict(item) for item in page.documents]
    return ApiResponse.json(200, {"documents": documents, "continuation": page.continuation})


LOOKUP_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
MAX_VALUE_CHARS = 1024


def _lookup(request: ApiRequest) -> Lookup | None:
    """``lookup`` and ``value``, both or neither (400 ``INVALID_QUERY``)."""
    name, value = request.query.get("lookup"), request.query.get("value")
    if name is None and value is None:
        return None
    if name is None or not LOOKUP_NAME.fullmatch(name):
        raise _bad_query("lookup", "lookup must name a lookup field (a-z, 0-9, _).")
    if not value or len(value) > MAX_VALUE_CHARS:
        raise _bad_query("value", f"value must be 1 to {MAX_VALUE_CHARS} characters.")
    return Lookup(name, value)


def _bad_query(name: str, message: str) -> BadRequest:
    return BadRequest(message, code="INVALID_QUERY", field=name, location=["query", name])
