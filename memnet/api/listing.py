"""HTTP handler for listing a namespace's documents: ``GET …/documents/{namespace}/``
(issue 15, capability 2; docs/api.md). The Functions route is the document's
(``documents/{namespace}/{*path}``): its catch-all matches the empty string, and
:func:`memnet.api.documents.get_document` hands an empty path here."""

from __future__ import annotations

from dataclasses import asdict

from memnet import bootstrap
from memnet.api import parsing
from memnet.api.http import ApiRequest, ApiResponse
from memnet.domain.callers import Caller
from memnet.services.listing import NamespaceRef

DEFAULT_LIMIT = 50
MAX_LIMIT = 100  # a page costs one read per document: bounded well under a second


def list_documents(request: ApiRequest, caller: Caller) -> ApiResponse:
    where = NamespaceRef(
        parsing.path_id(request, "tenant_id"),
        parsing.path_id(request, "user_id"),
        parsing.path_id(request, "namespace"),
    )
    profile_id = parsing.optional_str(request.query, "profile_id")
    limit = parsing.bounded_int(request.query, "limit", DEFAULT_LIMIT, MAX_LIMIT)
    page = bootstrap.services().listing.list_documents(
        caller, where, profile_id, limit, request.query.get("continuation")
    )
    documents = [asdict(item) for item in page.documents]
    return ApiResponse.json(200, {"documents": documents, "continuation": page.continuation})
