"""The common document envelope (spec 9.1) and how documents are serialised.

The service owns every envelope field; ops may only touch ``/content``. ``change_id``
ties the stored document to its newest audit record (docs/decisions.md, "Audit and history").
A leaf of the domain: every rule module may import it (a fresh document of a binding is
:func:`memnet.domain.bindings.new_envelope`).
"""

from __future__ import annotations

import json
from typing import Any

Json = dict[str, Any]  # a JSON object: a stored record's or an answer's one JSON form

ENVELOPE_FIELDS = (
    "doc_id",
    "schema_id",
    "schema_version",
    "created_at",
    "updated_at",
    "updated_by",
    "change_id",
    "content",
)
EXPIRES_AT = "expires_at"  # optional: a short-lived document's (memnet.domain.expiry)
FIELD_ORDER = (*ENVELOPE_FIELDS[:-1], EXPIRES_AT, ENVELOPE_FIELDS[-1])  # as stored
CONTENT = "content"
MAX_DOCUMENT_DEPTH = 64  # levels, the envelope object being 1 (as deep as a request body)


def envelope_schema(schema_id: str, schema_version: str, content_ref: str) -> dict[str, Any]:
    """The whole-document schema: service-owned envelope around the profile's content."""
    text = {"type": "string", "minLength": 1}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "required": list(ENVELOPE_FIELDS),
        "additionalProperties": False,
        "properties": {
            "doc_id": text,
            "created_at": text,
            "updated_at": text,
            "updated_by": text,
            "change_id": text,
            EXPIRES_AT: text,
            "schema_id": {"const": schema_id},
            "schema_version": {"const": schema_version},
            "content": {"$ref": content_ref},
        },
    }


def serialise(document: Any) -> str:
    """The compact form that is stored and that ``max_chars`` counts."""
    return json.dumps(document, ensure_ascii=False, separators=(",", ":"))


def char_count(document: Any) -> int:
    return len(serialise(document))


def canonical(value: Any) -> bytes:
    """Deterministic bytes for hashing (sorted keys, compact)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()
