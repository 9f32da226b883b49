"""The event digest record (spec 9.2) and its validation. Pure: no I/O.

Tenant and user come from the path; a body that names others is rejected. An absent
``event_id`` is left None here: the service derives a time-sortable one from the
idempotency claim. ``recorded_by`` is the authenticated caller, set here, never taken
from the body. ``sensitivity`` (``{"profile_id", "class"}``) is the event's class, checked
here for shape only: whether the profile lists the class and the writer is cleared for it
is :mod:`memnet.services.events.classes`' check. The timestamp is stored in the canonical UTC form
(:mod:`memnet.domain.timestamps`). :func:`parse_stored` checks a stored blob the same way
before it is indexed.
"""

from __future__ import annotations

import json
import re
from typing import Any

from memnet.domain.errors import BadRequest
from memnet.domain.identifiers import SEGMENT, check_identifier
from memnet.domain.timestamps import normalise_timestamp

FIELDS = frozenset(
    {
        "event_id",
        "tenant_id",
        "user_id",
        "service_id",
        "timestamp",
        "source_type",
        "digest",
        "keywords",
        "project_ids",
        "snapshot_uri",
        "evidence",
        "importance",
        "sensitivity",
    }
)
MAX_DIGEST_CHARS = 4000
MAX_KEYWORDS = 32
MAX_KEYWORD_CHARS = 64
MAX_PROJECTS = 16
MAX_EVIDENCE_CHARS = 4096
MAX_MESSAGE_IDS = 200
SNAPSHOT_URI = re.compile(
    r"blob://tenants/(?P<t>[^/]+)/users/(?P<u>[^/]+)/snapshots/[A-Za-z0-9][A-Za-z0-9._/-]{0,400}"
)


def parse_event(
    body: dict[str, Any], tenant_id: str, user_id: str, caller_id: str
) -> dict[str, Any]:
    """The canonical record to store, or 400 naming the first bad field. ``service_id``
    defaults to the caller (whether the caller may act as it is the service's check)."""
    if body.get("recorded_by", caller_id) != caller_id:
        raise _bad("recorded_by", "is set by the server to the authenticated caller")
    fields = {k: v for k, v in body.items() if k != "recorded_by"}
    return {**_checked(fields, tenant_id, user_id, caller_id), "recorded_by": caller_id}


def parse_stored(data: bytes, tenant_id: str, user_id: str, event_id: str) -> dict[str, Any]:
    """The fields of an event blob, checked as a write is (timestamp normalised), for the
    index; 400 naming what is wrong when the blob holds no valid event ``event_id``."""
    try:
        record = json.loads(data)
    except ValueError as exc:  # also bytes that are not UTF-8
        raise BadRequest("The event blob is not JSON.", code="MALFORMED_JSON") from exc
    if not isinstance(record, dict) or record.get("event_id") != event_id:
        raise _bad("event_id", "the blob holds no event with the id in its name")
    fields = {k: v for k, v in record.items() if k != "recorded_by"}
    return _checked(fields, tenant_id, user_id, None)


def _checked(
    body: dict[str, Any], tenant_id: str, user_id: str, default_service: str | None
) -> dict[str, Any]:
    unknown = sorted(set(body) - FIELDS)
    if unknown:
        raise BadRequest(f"Unknown event fields: {unknown}.", code="UNKNOWN_FIELD", fields=unknown)
    _same_scope(body, "tenant_id", tenant_id)
    _same_scope(body, "user_id", user_id)
    return {
        "event_id": _event_id(body.get("event_id")),
        "tenant_id": tenant_id,
        "user_id": user_id,
        "service_id": _identifier(body.get("service_id", default_service), "service_id"),
        "timestamp": normalise_timestamp(body.get("timestamp"), "timestamp"),
        "source_type": _identifier(body.get("source_type"), "source_type"),
        "digest": _text(body.get("digest"), "digest", MAX_DIGEST_CHARS),
        "keywords": _keywords(body.get("keywords", [])),
        "project_ids": _project_ids(body.get("project_ids", [])),
        "snapshot_uri": _snapshot_uri(body.get("snapshot_uri"), tenant_id, user_id),
        "evidence": _evidence(body.get("evidence")),
        **_importance(body.get("importance")),
        **_sensitivity(body.get("sensitivity")),
    }


def label(profile_id: str, name: str) -> str:
    """The label of class ``name`` of profile ``profile_id``, as the search index holds
    and filters it (both identifiers: neither holds a colon)."""
    return f"{profile_id}:{name}"


def _importance(value: Any) -> dict[str, float]:
    """``{"importance": x}`` for a number 0 to 1 (ranking, docs/api.md), ``{}`` for
    none: events written before it existed have no such member either."""
    if value is None:
        return {}
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise _bad("importance", "must be a number from 0 to 1")
    return {"importance": float(value)}


def _sensitivity(value: Any) -> dict[str, dict[str, str]]:
    """``{"sensitivity": {"profile_id", "class"}}`` for a class, ``{}`` for none."""
    if value is None:
        return {}
    if not isinstance(value, dict) or set(value) != {"profile_id", "class"}:
        raise _bad("sensitivity", 'must be {"profile_id": ..., "class": ...}')
    named = {key: _identifier(value[key], f"sensitivity.{key}") for key in ("profile_id", "class")}
    return {"sensitivity": named}


def _bad(field: str, message: str) -> BadRequest:
    return BadRequest(f"{field}: {message}", code="INVALID_FIELD", field=field)


def _same_scope(body: dict[str, Any], field: str, expected: str) -> None:
    if field in body and body[field] != expected:
        raise BadRequest(
            f"{field} in the body must match the path.", code="SCOPE_MISMATCH", field=field
        )


def _event_id(value: Any) -> str | None:
    """The caller's event id, checked; None when absent (the service derives one from
    the idempotency claim, so a retry finds the event its first attempt stored)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise _bad("event_id", "must be a string")
    return check_identifier("event_id", value)


def _identifier(value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise _bad(field, "is required and must be a string")
    return check_identifier(field, value)


def _text(value: Any, field: str, limit: int) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > limit:
        raise _bad(field, f"must be a non-empty string of at most {limit} characters")
    return value


def _keywords(value: Any) -> list[str]:
    if not isinstance(value, list) or len(value) > MAX_KEYWORDS:
        raise _bad("keywords", f"must be a list of at most {MAX_KEYWORDS} strings")
    return [_text(k, "keywords", MAX_KEYWORD_CHARS) for k in value]


def _project_ids(value: Any) -> list[str]:
    if not isinstance(value, list) or len(value) > MAX_PROJECTS:
        raise _bad("project_ids", f"must be a list of at most {MAX_PROJECTS} identifiers")
    if not all(isinstance(p, str) and SEGMENT.fullmatch(p) for p in value):
        raise _bad("project_ids", "each must match " + SEGMENT.pattern)
    return list(value)


def _snapshot_uri(value: Any, tenant_id: str, user_id: str) -> str | None:
    if value is None:
        return None
    found = SNAPSHOT_URI.fullmatch(value) if isinstance(value, str) else None
    if found is None or ".." in value or (found["t"], found["u"]) != (tenant_id, user_id):
        raise _bad(
            "snapshot_uri",
            "must be blob://tenants/{tenant}/users/{user}/snapshots/... of this user",
        )
    return str(value)


def _evidence(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or len(json.dumps(value)) > MAX_EVIDENCE_CHARS:
        raise _bad("evidence", f"must be an object of at most {MAX_EVIDENCE_CHARS} chars")
    ids = value.get("message_ids", [])
    if (
        not isinstance(ids, list)
        or len(ids) > MAX_MESSAGE_IDS
        or not all(isinstance(i, str) and 0 < len(i) <= 128 for i in ids)
    ):
        raise _bad("evidence", "message_ids must be a list of short strings")
    _span(value.get("span"))
    return value


MAX_OFFSET = 2**53 - 1  # the largest integer every JSON reader holds exactly


def _span(span: Any) -> None:
    if span is None:
        return
    ok = isinstance(span, dict) and all(_offset(span.get(k)) for k in ("start", "end"))
    if not ok or span["start"] > span["end"]:
        raise _bad("evidence", f"span is {{start, end}} with 0 <= start <= end <= {MAX_OFFSET}")
    span.update(start=int(span["start"]), end=int(span["end"]))  # 41.0 is stored as 41


def _offset(value: Any) -> bool:
    """A non-negative integer; ``41.0`` is one (JSON has one number type, and JSON Schema's
    ``integer`` matches it)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return 0 <= value <= MAX_OFFSET and (isinstance(value, int) or value.is_integer())
