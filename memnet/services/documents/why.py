"""``GET {document}:why?path=``: the changes that produced the value now at a path of a
document's content (issue 27, item 4; docs/decisions.md "Why a value is there"). The
attribution is :func:`memnet.domain.attribution.attribute`; this module feeds it the
document's committed changes newest first, through its version index, as far as they
may be read (:meth:`Versions.oldest_readable`) and at most :data:`MAX_CHANGES` of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from memnet.domain import pointers
from memnet.domain.attribution import Attribution, Touch, attribute, canonical_path
from memnet.domain.audit_records import AuditRecord
from memnet.domain.document_model import StoredDocument
from memnet.domain.envelope import CONTENT, Json
from memnet.domain.errors import Gone, NotFound
from memnet.domain.layout import DocumentRef
from memnet.domain.pointers import Segments
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
    changes = _Changes(versions, audit, ref, current)
    top, document = len(changes.index.changes) - 1, current.document
    if as_of is not None:
        version = versions.at(ref, current, as_of)
        top, document = changes.index.positions[version.change_id], version.document
    segments = _located(document, path)
    found, truncated_by = changes.attribute(document, segments, top)
    more = None
    if truncated_by == WALK_LIMIT:
        oldest = changes.index.changes[changes.floor(top) - 1]
        more = {"as_of": oldest, "path": pointers.render(found.path[1:])}
    return Why(
        path=pointers.render(segments[1:]),
        change_id=document["change_id"],
        etag=current.etag,
        value=pointers.resolve(document, segments),
        changes=tuple(_change(touch) for touch in found.touches),
        truncated_by=truncated_by,
        more=more,
    )


def origins(
    versions: Versions,
    audit: AuditLog,
    ref: DocumentRef,
    current: StoredDocument,
    shown: Json,
    paths: Iterable[Segments],
) -> dict[str, Json] | None:
    """Where the value at each of ``paths`` (of the content) of ``shown``, a version of
    the document ``current`` is the latest of, came from: its origin change (who, when,
    why, on what evidence; no ops), or only ``truncated_by``. None when ``shown`` is no
    stored version (migrated in memory, or past what may be read). The walks share the
    document's records: each is read once."""
    changes = _Changes(versions, audit, ref, current)
    top = changes.index.positions.get(shown.get("change_id", ""))
    if top is None:
        return None
    document = current.document
    if top != len(changes.index.changes) - 1:
        try:
            document = versions.document(ref, changes.index, top)
        except Gone:
            return None
    if document.get("schema_version") != shown.get("schema_version"):
        return None
    found: dict[str, Json] = {}
    for path in paths:
        segments = canonical_path(document, (CONTENT, *path))
        if segments is None:
            continue
        walked, truncated_by = changes.attribute(document, segments, top)
        if truncated_by is not None:
            found[pointers.render(path)] = {"truncated_by": truncated_by}
        else:
            origin = _change(walked.touches[-1])
            found[pointers.render(path)] = {k: origin[k] for k in ORIGIN_FIELDS}
    return found


ORIGIN_FIELDS = ("change_id", "actor", "timestamp", "reason", "confidence", "evidence", "origin")


class _Changes:
    """A document's committed changes as walks read them, newest first, as far as
    versions may be read and at most :data:`MAX_CHANGES` from where a walk starts: each
    record and each version read at most once, however many values are walked."""

    def __init__(
        self, versions: Versions, audit: AuditLog, ref: DocumentRef, current: StoredDocument
    ) -> None:
        self._versions, self._audit, self._ref = versions, audit, ref
        self.index = versions.index(ref, current)
        self.low, self.refused = versions.oldest_readable(ref, self.index)
        self._records: dict[int, AuditRecord | None] = {}
        self._documents: dict[int, Json | None] = {}

    def floor(self, top: int) -> int:
        """The oldest position a walk from ``top`` reads."""
        return max(self.low, top + 1 - MAX_CHANGES)

    def attribute(
        self, document: Json, segments: Segments, top: int
    ) -> tuple[Attribution, str | None]:
        """The attribution of the value at ``segments`` of ``document`` (the version at
        ``top``), and why its origin is not in it (None: it is)."""
        stopped: list[str | None] = []
        found = attribute(document, segments, self._newest_first(top, stopped), self._before)
        if found.found:
            return found, None
        return found, (stopped[0] if stopped else None) or self.refused or "HISTORY_TRUNCATED"

    def _newest_first(self, top: int, stopped: list[str | None]) -> Iterator[AuditRecord]:
        ref = self._ref
        for position in range(top, self.floor(top) - 1, -1):
            if position not in self._records:
                change_id = self.index.changes[position]
                self._records[position] = self._audit.read(ref.tenant_id, ref.user_id, change_id)
            record = self._records[position]
            if record is None:  # retention removed it after the index was read
                stopped.append("HISTORY_TRUNCATED")
                return
            yield record
        stopped.append(self.refused if self.floor(top) == self.low else WALK_LIMIT)

    def _before(self, record: AuditRecord) -> Json | None:
        position = self.index.positions[record.change_id] - 1
        if position < self.low:
            return None
        if position not in self._documents:
            try:
                self._documents[position] = self._versions.document(self._ref, self.index, position)
            except Gone:
                self._documents[position] = None
        return self._documents[position]


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
