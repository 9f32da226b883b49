"""Azure Functions entry points (Python v2 model). Thin: each trigger adapts the request,
calls one handler in ``memnet.api``, and renders the response. Nothing heavy at import."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

import azure.functions as func

from memnet.api import context, documents, health
from memnet.api.http import ApiRequest, ApiResponse

app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

DOCUMENT_ROUTE = "v1/tenants/{tenant_id}/users/{user_id}/documents/{namespace}/{*path}"


def _call(handler: Callable[[ApiRequest], ApiResponse], req: func.HttpRequest) -> func.HttpResponse:
    request = ApiRequest.of(
        req.method,
        urlsplit(req.url).path,
        req.route_params,
        dict(req.headers),
        dict(req.params),
        req.get_body(),
    )
    response = handler(request)
    return func.HttpResponse(response.body, status_code=response.status, headers=response.headers)


@app.route(route="v1/health", methods=["GET"])
def get_health(req: func.HttpRequest) -> func.HttpResponse:
    return _call(health.get_health, req)


@app.route(route=DOCUMENT_ROUTE, methods=["GET"])
def get_document(req: func.HttpRequest) -> func.HttpResponse:
    """Read a document (spec 10.1); a path ending in ``:history`` lists its changes."""
    return _call(documents.get_document, req)


@app.route(route=DOCUMENT_ROUTE, methods=["PATCH"])
def patch_document(req: func.HttpRequest) -> func.HttpResponse:
    return _call(documents.patch_document, req)


@app.route(route=DOCUMENT_ROUTE, methods=["PUT"])
def put_document(req: func.HttpRequest) -> func.HttpResponse:
    return _call(documents.put_document, req)


@app.route(route="v1/tenants/{tenant_id}/users/{user_id}/context:assemble", methods=["POST"])
def assemble_context(req: func.HttpRequest) -> func.HttpResponse:
    """The memory to inject at conversation start (spec 10.4, 11)."""
    return _call(context.assemble_context, req)
