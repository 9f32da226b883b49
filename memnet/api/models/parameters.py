"""OpenAPI parameters, headers, links and security schemes of the routes: the parts of
the document pydantic models do not give (:mod:`memnet.api.openapi` assembles it)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from memnet.api.models.base import IDENTIFIER
from memnet.domain.identifiers import SEGMENT
from memnet.domain.proposals import PROPOSAL_ID

if TYPE_CHECKING:
    from memnet.api.models.routes import Route

_LAST = SEGMENT.pattern.replace("{0,127}", "{0,122}")
DOCUMENT_PATH = {
    "type": "string",
    "maxLength": 512,
    "pattern": rf"^(?!.*\.\.)({SEGMENT.pattern}/){{0,7}}{_LAST}\.json$",
    "description": "The catch-all {*path} of the route: 1-8 identifier segments joined "
    "by '/', the last ending in '.json', no '..'; at most 512 characters. Send its '/' "
    "unescaped.",
}
_PATH_PARAMETERS: dict[str, dict[str, Any]] = {
    "path": DOCUMENT_PATH,
    "patch_index": {"type": "string", "pattern": "^[0-9]{1,4}$"},
    "action": {"type": "string", "enum": ["retry", "discard"]},
    "proposal_id": {
        "type": "string",
        "pattern": f"^{PROPOSAL_ID.pattern}$",
        "description": "A proposal_id from the queue (GET …/proposals).",
    },
    "decision": {"type": "string", "enum": ["approve", "edit", "reject"]},
}
_QUERY: dict[str, dict[str, Any]] = {
    "profile_id": {"schema": IDENTIFIER, "description": "Default: the caller's only profile."},
    "limit": {"schema": {"type": "integer", "minimum": 1, "maximum": 1000}},
    "before": {
        "schema": {"type": "string", "pattern": "^chg_[0-9a-f]{28}$"},
        "description": "The next_before of the previous page.",
    },
    "as_of": {
        "schema": {
            "type": "string",
            "anyOf": [{"pattern": "^chg_[0-9a-f]{28}$"}, {"format": "date-time"}],
        },
        "description": "A version: a change id of this document, or an RFC 3339 instant "
        "(the newest version committed by then). 410 HISTORY_TRUNCATED or "
        "HISTORY_FORGOTTEN for a version retention or a forget removed.",
    },
    "why_path": {
        "name": "path",
        "required": True,
        "schema": {"type": "string", "pattern": "^/", "maxLength": 1024},
        "description": "A JSON Pointer into the document's content (/durable_facts/3), "
        "without /content.",
    },
    "from": {
        "required": True,
        "schema": {"type": "string", "pattern": "^chg_[0-9a-f]{28}$"},
        "description": "The change id of the version the ops start from.",
    },
    "to": {
        "schema": {"type": "string", "pattern": "^(chg_[0-9a-f]{28}|latest)$", "default": "latest"},
        "description": "The change id of the version the ops lead to, or latest.",
    },
    "page_limit": {
        "name": "limit",
        "schema": {"type": "integer", "minimum": 1, "maximum": 100, "default": 50},
    },
    "continuation": {
        "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,2048}$"},
        "description": "The continuation of the previous page.",
    },
    "after": {
        "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,2048}$"},
        "description": "The after cursor of the previous page (opaque).",
    },
    "inventory_limit": {
        "name": "limit",
        "schema": {"type": "integer", "minimum": 1, "maximum": 500, "default": 100},
    },
    "conversation_id": {
        "schema": IDENTIFIER,
        "description": "Only events whose evidence or snapshot points at this conversation.",
    },
    "lookup": {
        "schema": {"type": "string", "pattern": "^[a-z][a-z0-9_]{0,63}$"},
        "description": "A lookup field the namespace's bindings declare (lookup_fields); "
        "with value: only documents holding value there. Send both or neither.",
    },
    "value": {
        "schema": {"type": "string", "minLength": 1, "maxLength": 1024},
        "description": "What the lookup field must equal (or, an array, contain).",
    },
}
_REQUEST_HEADERS: dict[str, dict[str, Any]] = {
    "Idempotency-Key": {
        "schema": {"type": "string", "pattern": "^[!-~]{1,255}$"},
        "description": "Same key and request: the stored response again; another request: "
        "409 IDEMPOTENCY_KEY_REUSED.",
    },
    "If-Match": {
        "schema": {"type": "string", "pattern": '^(W/)?"[!#-~]{1,200}"$'},
        "description": "Update this version (412 ETAG_MISMATCH if stale). Send If-Match or "
        "If-None-Match: * (428 PRECONDITION_REQUIRED if neither; 400 if both).",
    },
    "If-None-Match": {
        "schema": {"type": "string", "enum": ["*"]},
        "description": "Create: the document must not exist yet.",
    },
}
_RESPONSE_HEADERS: dict[str, dict[str, Any]] = {
    "x-request-id": {"type": "string", "pattern": "^req_[0-9a-f]{24}$"},
    "ETag": {"type": "string"},
    "Location": {"type": "string"},
    "Idempotent-Replayed": {"type": "string", "enum": ["true"]},
    "Retry-After": {"type": "string", "pattern": "^[0-9]+$"},
    "WWW-Authenticate": {"type": "string"},
}
STATUS_TEXT = {
    200: "OK",
    201: "Created",
    202: "Accepted",
    400: "Malformed request (MALFORMED_JSON, UNKNOWN_FIELD, INVALID_FIELD, ...).",
    401: "No caller could be established (UNAUTHENTICATED).",
    403: "The caller may not do this (TENANT_FORBIDDEN, ROLE_FORBIDDEN, ...).",
    404: "Not found (DOCUMENT_NOT_FOUND, PROFILE_NOT_FOUND, ...).",
    409: "Conflict (IDEMPOTENCY_KEY_REUSED, FORGET_IN_PROGRESS, ...).",
    410: "Gone (HISTORY_TRUNCATED, HISTORY_FORGOTTEN): that version is kept no longer.",
    412: "ETAG_MISMATCH: details.latest_etag.",
    413: "PAYLOAD_TOO_LARGE.",
    415: "UNSUPPORTED_MEDIA_TYPE: the body is not JSON in UTF-8.",
    422: "Policy, schema or limit violations: details.violations.",
    428: "PRECONDITION_REQUIRED: send If-Match or If-None-Match: *.",
    429: "QUOTA_EXCEEDED.",
    500: "INTERNAL: only the request id.",
    503: "DEPENDENCY_UNAVAILABLE or NOT_READY.",
}
SECURITY_SCHEMES = {
    "apiKey": {
        "type": "http",
        "scheme": "bearer",
        "description": "Authorization: Bearer <API key> (MEMNET_AUTH=apikeys).",
    },
    "entra": {
        "type": "http",
        "scheme": "bearer",
        "bearerFormat": "JWT",
        "description": "Authorization: Bearer <Entra ID access token> (MEMNET_AUTH=entra). "
        "Behind App Service Authentication the platform's X-MS-CLIENT-PRINCIPAL headers "
        "identify the caller instead.",
    },
}
_DOCUMENT_PARAMETERS = ("tenant_id", "user_id", "namespace", "path")


_SAME_PATH_LINKS = {
    "put_snapshot": ("get_snapshot", "get_replay", "redrive_replay"),
    "forget_user": ("forget_status",),
    "forget_conversation": ("forget_conversation_status",),
}
"""Operations that read what one wrote, under the same path parameters."""


def path_names(route: str) -> list[str]:
    return re.findall(r"\{\*?([A-Za-z_]+)\}", route)


def path_parameters(route: str) -> list[dict[str, Any]]:
    """One required parameter per ``{name}`` or ``{*name}`` of a Functions route."""
    return [
        {
            "name": name,
            "in": "path",
            "required": True,
            "schema": _PATH_PARAMETERS.get(name, IDENTIFIER),
        }
        for name in path_names(route)
    ]


def query_parameter(name: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, **_QUERY[name]}


def header_parameter(name: str, headers: tuple[str, ...] = ()) -> dict[str, Any]:
    """``name`` among a route's ``headers``: If-Match is required where it is the only
    precondition the route takes (a revert), not where If-None-Match is the other."""
    required = name == "Idempotency-Key" or (name == "If-Match" and "If-None-Match" not in headers)
    return {"name": name, "in": "header", "required": required, **_REQUEST_HEADERS[name]}


def response_header(name: str) -> dict[str, Any]:
    return {"schema": _RESPONSE_HEADERS[name]}


def links(route: Route) -> dict[str, Any]:
    """Stateful links: a written document to its read and history; an event to its read;
    a namespace's listing to its first document."""
    if route.collection:
        same = {name: f"$request.path.{name}" for name in _DOCUMENT_PARAMETERS[:3]}
        first = {**same, "path": "$response.body#/documents/0/path"}
        return {"GetDocument": {"operationId": "get_document", "parameters": first}}
    if route.name in ("patch_document", "put_document", "get_document") and not route.suffix:
        same = {name: f"$request.path.{name}" for name in _DOCUMENT_PARAMETERS}
        found = {"GetHistory": {"operationId": "get_document_history", "parameters": same}}
        if route.name != "get_document":
            found["GetDocument"] = {"operationId": "get_document", "parameters": same}
        return found
    if route.name in _SAME_PATH_LINKS:
        return {
            f"Then_{target}": {
                "operationId": target,
                "parameters": {name: f"$request.path.{name}" for name in path_names(route.route)},
            }
            for target in _SAME_PATH_LINKS[route.name]
        }
    if route.name == "forget_status":
        parameters = {
            "tenant_id": "$request.path.tenant_id",
            "receipt_id": "$response.body#/receipt_id",
        }
        return {"GetReceipt": {"operationId": "get_receipt", "parameters": parameters}}
    if route.name == "write_event":
        parameters = {
            "tenant_id": "$request.path.tenant_id",
            "user_id": "$request.path.user_id",
            "event_id": "$response.body#/event/event_id",
        }
        return {"GetEvent": {"operationId": "get_event", "parameters": parameters}}
    return {}
