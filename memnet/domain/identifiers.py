"""Identifier grammar (docs/api.md, "Identifiers").

tenant_id, user_id, namespace and every segment of a document path match
``^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$``; a document path ends in ``.json``. Anything
else is a 400 before any storage is touched.
"""

from __future__ import annotations

import re

from memnet.domain.errors import BadRequest

SEGMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
MAX_PATH_CHARS = 512
MAX_PATH_SEGMENTS = 8


def check_identifier(kind: str, value: str) -> str:
    """Return ``value`` if it is a valid identifier of ``kind``, else raise 400."""
    if not SEGMENT.fullmatch(value) or value in (".", ".."):
        raise BadRequest(
            f"{kind} must match {SEGMENT.pattern} (1-128 chars, no leading '.', '-' or '_').",
            code="INVALID_IDENTIFIER",
            field=kind,
        )
    return value


def check_document_path(path: str) -> str:
    """Validate a namespace-relative document path such as ``project-alpha.json``."""
    if len(path) > MAX_PATH_CHARS or not path.endswith(".json"):
        raise BadRequest(
            f"path must end in '.json' and be at most {MAX_PATH_CHARS} characters.",
            code="INVALID_PATH",
            field="path",
        )
    segments = path.split("/")
    if len(segments) > MAX_PATH_SEGMENTS:
        raise BadRequest("path has too many segments.", code="INVALID_PATH", field="path")
    for segment in segments:
        if not SEGMENT.fullmatch(segment) or ".." in segment:
            raise BadRequest(
                "each path segment must match " + SEGMENT.pattern + " and contain no '..'.",
                code="INVALID_PATH",
                field="path",
            )
    return path
