"""``GET {document}:why?path=``: the changes that produced the value now at a path of a
document's content (issue 27, item 4; docs/decisions.md "Why a value is there"). The
attribution is :func:`memnet.domain.attribution.attribute`; this module feeds it the
document's committed changes newest first, through its version index, as far as they
may be read (:meth:`Versions.oldest_readable`) and at most :data:`MAX_CHANGES` of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memnet.domain import pointers
from memnet.domain.attribution import Touch, attribute, canonical_path
from memnet.domain.audit_records import AuditRecord
from memnet.domain.document_model import StoredDocument
from memnet.domain.envelope import CONTENT, Json
from memnet.domain.errors import Gone, NotFound
from memnet.domain.layout import DocumentRef
from memnet.services.documents.audit import AuditLog
from memnet.services.documents.versions import Versions

MAX_CHANGES = 100  # changes one request walks back at most
WALK_LIMIT = "WALK_LIMIT"


@dataclass(frozen=True)
class Why:
    """The value at ``path`` (of the content) in the version ``change_id``, and the
    changes that produced it, newest first; ``truncated_by`` says why its origin is not
    among them (None: it is the last); after ``WALK_LIMIT``, ``more`` is the ``as_of``
    and ``path`` that go on from where the walk stopped."""

    path: str
    change_id: str
    etag: str
    value: Any
    changes: tuple[Json, ...]
    truncated_by: str | None
    more: Json | None = None

    def as_json(self) -> Json:
        return {
            "path": self.path,
            "change_id": self.change_id,
            "etag": self.etag,
            "value": self.value,
            "changes": list(self.changes),
            "truncated": self.truncated_by is not None,
            "truncated_by": self.truncated_by,
            "more": self.more,
        }


def explain(
    versions: Versions,
    audit: AuditLog,
    ref: DocumentRef,
    current: StoredDocument,
    path: str,
    as_of: str | None = None,
) -> Why:
    """Why the value at ``path`` (a JSON Pointer into the content, checked at the edge)
    is in ``current``, or in its version ``as_of`` (as a point-in-time read names one):
    404 ``PATH_NOT_FOUND`` when nothing is there."""
    index = versions.index(ref, current)
    top, document = len(index.changes) - 1, current.document
    if as_of is not None:
        version = versions.at(ref, current, as_of)
        top, document = index.positions[version.change_id], version.document
    segments = _located(document, path)
    low, refused = versions.oldest_readable(ref, index)
    floor = max(low, top + 1 - MAX_CHANGES)
    stopped: list[str | None] = []

    def newest_first() -> Any:
        for position in range(top, floor - 1, -1):
            record = audit.read(ref.tenant_id, ref.user_id, index.changes[position])
            if record is None:  # retention removed it after the index was read
                stopped.append("HISTORY_TRUNCATED")
                return
            yield record
        stopped.append(refused if floor == low else WALK_LIMIT)

    def before(record: AuditRecord) -> Json | None:
        position = index.positions[record.change_id] - 1
        if position < low:
            return None
        try:
            return versions.document(ref, index, position)
        except Gone:
            return None

    found = attribute(document, segments, newest_first(), before)
    truncated_by = more = None
    if not found.found:
        truncated_by = (stopped[0] if stopped else None) or refused or "HISTORY_TRUNCATED"
    if truncated_by == WALK_LIMIT:
        more = {"as_of": index.changes[floor - 1], "path": pointers.render(found.path[1:])}
    return Why(
        path=pointers.render(segments[1:]),
        change_id=document["change_id"],
        etag=current.etag,
        value=pointers.resolve(document, segments),
        changes=tuple(_change(touch) for touch in found.touches),
        truncated_by=truncated_by,
        more=more,
    )


def _located(document: Json, path: str) -> tuple[str, ...]:
    """``path`` of the content as a canonical path of ``document``, or 404."""
    segments = canonical_path(document, (CONTENT, *pointers.parse(path)))
    if segments is None:
        hint = ""
        if path.startswith("/content"):
            hint = " (a pointer into the content: leave out /content)"
        raise NotFound(f"Nothing is at {path!r} in the document{hint}.", code="PATH_NOT_FOUND")
    return segments


def _change(touch: Touch) -> Json:
    """One change as ``:why`` shows it: who, when, why, on what evidence, and its ops
    that touched the value (each with its index in the change)."""
    record = touch.record
    return {
        "change_id": record.change_id,
        "role": touch.role,
        "path": pointers.render(touch.path[1:]),
        "actor": record.actor,
        "timestamp": record.timestamp,
        "reason": record.reason,
        "confidence": record.confidence,
        "evidence": record.evidence,
        "origin": record.origin,
        "ops": [{"index": i, **record.ops[i]} for i in touch.ops],
    }
