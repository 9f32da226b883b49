"""Versions of a document: the document as it was after one committed change (issue 27;
docs/decisions.md "Versions of a document"). ``as_of``, ``:diff``, ``:revert`` and
``:why`` are built on :meth:`Versions.at`.

Folding a chain from its first change costs one read per change; a document with a
thousand changes would make a point-in-time read a thousand reads. So each document has
a derived cache, built on first use and safe to lose, under the user's ``versions/``:

- an **index** (``versions/index/{namespace}/{path}``): the committed change ids oldest
  first, up to the head it was built at, and which of them reset the document (a
  ``base``), retract a conversation (``forget_conversation``) or hold a checkpoint. A
  read brings it up to the current head by walking back only the changes made since.
- **checkpoints** (``versions/{change_id}.json``): the document after every
  :data:`CHECKPOINT_EVERY`-th change, written by the fold that passes it.

So a version costs the index, one checkpoint and fewer than :data:`CHECKPOINT_EVERY`
audit records. A document whose retained changes all build on a version retention
removed (no ``base`` left) gets its current document as the head's checkpoint when the
index is built: the head and later versions read; the retained changes before it cannot
be rebuilt and answer 410 ``HISTORY_TRUNCATED`` like the removed ones.

Writes to the cache are conditional (index) or deterministic (a checkpoint of a
committed change never changes), and a lost race only means the next read does the
work again. What must stay gone is decided from the audit chain, not the
cache: a version older than the user's audit horizon answers 410 ``HISTORY_TRUNCATED``,
one older than a conversation's retraction 410 ``HISTORY_FORGOTTEN``, and retention and
a conversation forget drop the user's cache (:meth:`Versions.drop_user`) so its copies
go with what they copy. A forget of the user removes it with everything else.
"""

from __future__ import annotations

import bisect
import contextlib
import json
from dataclasses import dataclass, field, replace
from datetime import datetime
from itertools import islice

from memnet.domain.audit_records import AuditRecord, change_time, is_change_id
from memnet.domain.document_model import StoredDocument
from memnet.domain.envelope import Json
from memnet.domain.errors import Gone, NotFound
from memnet.domain.expiry import expired
from memnet.domain.layout import DocumentRef, user_prefix
from memnet.domain.timestamps import parse_timestamp
from memnet.ports import BlobNotFound, BlobStore, Condition, PreconditionFailed
from memnet.services.documents.audit import AuditLog
from memnet.services.records import JsonRecords, dump

CHECKPOINT_EVERY = 16  # a version folds at most this many records past a checkpoint
# changes one request walks back to bring an index up to the head: a document changed more
# often than this since its index was last read keeps only its newest MAX_WALK versions
# readable (older ones answer 410 HISTORY_TRUNCATED, as past the audit horizon)
MAX_WALK = 10_000
FORGET_REASON = "forget_conversation"


@dataclass(frozen=True)
class Version:
    """The document after ``change_id``, and the ETag of the latest version (what a
    revert's ``If-Match`` names)."""

    change_id: str
    document: Json
    latest_etag: str

    def as_json(self) -> Json:
        return {
            "change_id": self.change_id,
            "latest_etag": self.latest_etag,
            "document": self.document,
        }


@dataclass(frozen=True)
class VersionIndex:
    """A document's committed change ids, oldest first, up to ``head``; positions of
    the changes that start from a ``base``, that retract a conversation, and that
    have a checkpoint; ``truncated`` when retention removed the changes before the first."""

    head: str | None = None
    changes: tuple[str, ...] = ()
    bases: tuple[int, ...] = ()
    forgotten: tuple[int, ...] = ()
    checkpoints: tuple[int, ...] = ()
    truncated: bool = False
    positions: dict[str, int] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self.positions.update((c, i) for i, c in enumerate(self.changes))

    def as_json(self) -> Json:
        return {
            "head": self.head,
            "changes": list(self.changes),
            "bases": list(self.bases),
            "forgotten": list(self.forgotten),
            "checkpoints": list(self.checkpoints),
            "truncated": self.truncated,
        }

    @classmethod
    def from_json(cls, stored: Json) -> VersionIndex:
        return cls(
            head=stored["head"],
            changes=tuple(stored["changes"]),
            bases=tuple(stored["bases"]),
            forgotten=tuple(stored["forgotten"]),
            checkpoints=tuple(stored["checkpoints"]),
            truncated=bool(stored["truncated"]),
        )

    def extended(self, newer: list[AuditRecord], reached: bool) -> VersionIndex:
        """This index with ``newer`` (oldest first) after its last change, or, when the
        walk back from the head did not ``reach`` this index's head (a first build, a
        document created again after it expired), an index of ``newer`` alone."""
        start = self
        if not reached:
            start = VersionIndex(truncated=bool(newer) and newer[0].prev_change_id is not None)
        at = list(enumerate(newer, len(start.changes)))
        return replace(
            start,
            head=newer[-1].change_id if newer else start.head,
            changes=(*start.changes, *(r.change_id for r in newer)),
            bases=(*start.bases, *(i for i, r in at if r.base is not None)),
            forgotten=(
                *start.forgotten,
                *(i for i, r in at if r.reason == FORGET_REASON),
            ),
            positions={},
        )

    def at_instant(self, moment: datetime) -> int | None:
        """The position of the newest change minted at or before ``moment``."""
        times = [change_time(c) for c in self.changes]
        found = bisect.bisect_right(times, moment) - 1
        return found if found >= 0 else None


class Versions:
    """Reads a document's versions through its cache (see the module's docstring)."""

    def __init__(self, blobs: BlobStore, audit: AuditLog) -> None:
        self._blobs, self._audit, self._records = blobs, audit, JsonRecords(blobs)

    def at(self, ref: DocumentRef, current: StoredDocument, at: str) -> Version:
        """The version ``at`` names: a change id of this document, or an RFC 3339
        instant (the newest version committed at or before it)."""
        index = self.index(ref, current)
        position = self._position(ref, index, at)
        document = self.document(ref, index, position)
        if not at.startswith("chg_") and expired(document, _instant(at)):
            raise NotFound("The document had expired by then.", code="DOCUMENT_NOT_FOUND")
        return Version(index.changes[position], document, current.etag)

    def position(self, ref: DocumentRef, index: VersionIndex, change_id: str) -> int:
        """Where ``change_id`` is in ``index``, if it is a version one may read."""
        return self._position(ref, index, change_id)

    def oldest_readable(self, ref: DocumentRef, index: VersionIndex) -> tuple[int, str | None]:
        """The position of the oldest version of ``index`` that :meth:`position` lets one
        read, and the code that refuses the version before it (None: there is none, the
        first change is the document's first)."""
        low, code = 0, "HISTORY_TRUNCATED" if index.truncated else None
        if index.forgotten and max(index.forgotten) > low:
            low, code = max(index.forgotten), "HISTORY_FORGOTTEN"
        horizon = self._audit.horizon(ref.tenant_id, ref.user_id)
        if horizon is not None:
            past = bisect.bisect_right([change_time(c) for c in index.changes], horizon)
            if past >= low and past > 0:
                low, code = past, "HISTORY_TRUNCATED"
        return low, code

    def index(self, ref: DocumentRef, current: StoredDocument) -> VersionIndex:
        """The document's index, brought up to its current head (and saved, unless
        another reader saved one meanwhile)."""
        name = _index_name(ref)
        stored = self._records.read(name)
        index = VersionIndex.from_json(stored.value) if stored else VersionIndex()
        head = current.document.get("change_id")
        if index.head == head:
            return index
        newer: list[AuditRecord] = []
        for record in islice(self._audit.chain(ref, head), MAX_WALK):
            if record.change_id == index.head:
                break
            newer.append(record)
        reached = bool(newer) and index.head is not None and newer[-1].prev_change_id == index.head
        newer.reverse()
        index = self._anchored(ref, index.extended(newer, reached), current)
        self._save(name, index, stored.etag if stored else None)
        return index

    def document(self, ref: DocumentRef, index: VersionIndex, position: int) -> Json:
        """The document after the change at ``position``: folded from the nearest
        checkpoint or ``base`` at or before it, checkpointing on the way."""
        marks = sorted({*index.bases, *index.checkpoints})
        found = bisect.bisect_right(marks, position) - 1
        if found < 0:  # the base it starts from is past the audit horizon
            raise _truncated()
        start = marks[found]
        document: Json | None = None
        if start in index.checkpoints and start not in index.bases:
            document = self._checkpoint(ref, index.changes[start])
            if document is None:  # lost (a dropped cache raced this read): fold from a base
                return self.document(ref, replace(index, checkpoints=(), positions={}), position)
        else:
            document = self._record(ref, index.changes[start]).apply(None)
        written: list[int] = []
        for p in range(start + 1, position + 1):
            document = self._record(ref, index.changes[p]).apply(document)
            if (p + 1) % CHECKPOINT_EVERY == 0 and p not in index.checkpoints:
                name = _checkpoint_name(ref, index.changes[p])
                self._blobs.write(name, dump(document), Condition.unconditional())
                written.append(p)
        if written:
            self._note_checkpoints(ref, written)
        return document

    def drop_user(self, tenant_id: str, user_id: str) -> None:
        """Delete the user's whole cache (it is rebuilt from the audit log on use)."""
        for name in list(self._blobs.list_names(f"{user_prefix(tenant_id, user_id)}versions/")):
            with contextlib.suppress(BlobNotFound, PreconditionFailed):
                self._blobs.delete(name)

    # -- helpers -------------------------------------------------------------------

    def _anchored(
        self, ref: DocumentRef, index: VersionIndex, current: StoredDocument
    ) -> VersionIndex:
        """``index``, with the current document as its head's checkpoint when nothing
        else could start a fold (retention removed the base every retained change builds
        on): the head and the versions after it can then still be read."""
        if not index.changes or index.bases or index.checkpoints:
            return index
        head = len(index.changes) - 1
        name = _checkpoint_name(ref, index.changes[head])
        self._blobs.write(name, dump(current.document), Condition.unconditional())
        return replace(index, checkpoints=(head,), positions={})

    def _position(self, ref: DocumentRef, index: VersionIndex, at: str) -> int:
        if at.startswith("chg_"):
            position = index.positions.get(at) if is_change_id(at) else None
            if position is None:
                if is_change_id(at) and self._before_horizon(ref, change_time(at)):
                    raise _truncated()
                raise NotFound("No change of this document has this id.", code="CHANGE_NOT_FOUND")
        else:
            position = index.at_instant(_instant(at))
            if position is None:
                if index.truncated:
                    raise _truncated()
                raise NotFound("The document did not exist then.", code="DOCUMENT_NOT_FOUND")
        if self._before_horizon(ref, change_time(index.changes[position])):
            raise _truncated()
        if any(f > position for f in index.forgotten):
            raise Gone(
                "This version is older than a conversation's retraction: what it "
                "learned from that conversation stays forgotten.",
                code="HISTORY_FORGOTTEN",
            )
        return position

    def _before_horizon(self, ref: DocumentRef, minted: datetime) -> bool:
        horizon = self._audit.horizon(ref.tenant_id, ref.user_id)
        return horizon is not None and minted <= horizon

    def _record(self, ref: DocumentRef, change_id: str) -> AuditRecord:
        record = self._audit.read(ref.tenant_id, ref.user_id, change_id)
        if record is None:  # retention removed it after the index was read
            raise _truncated()
        return record

    def _checkpoint(self, ref: DocumentRef, change_id: str) -> Json | None:
        try:
            found: Json = json.loads(self._blobs.read(_checkpoint_name(ref, change_id)).data)
        except BlobNotFound:
            return None
        return found

    def _note_checkpoints(self, ref: DocumentRef, written: list[int]) -> None:
        name = _index_name(ref)
        stored = self._records.read(name)
        if stored is None:
            return
        index = VersionIndex.from_json(stored.value)
        marks = tuple(sorted({*index.checkpoints, *written}))
        index = replace(index, checkpoints=marks, positions={})
        self._save(name, index, stored.etag)

    def _save(self, name: str, index: VersionIndex, etag: str | None) -> None:
        with contextlib.suppress(PreconditionFailed):  # another reader saved one: theirs
            self._records.save(name, index.as_json(), etag)


def _index_name(ref: DocumentRef) -> str:
    return f"{user_prefix(ref.tenant_id, ref.user_id)}versions/index/{ref.namespace}/{ref.path}"


def _checkpoint_name(ref: DocumentRef, change_id: str) -> str:
    return f"{user_prefix(ref.tenant_id, ref.user_id)}versions/{change_id}.json"


def _instant(at: str) -> datetime:
    return parse_timestamp(at, "as_of")  # checked at the edge (api.documents.version_query)


def _truncated() -> Gone:
    return Gone(
        "This version is older than the audit history retention kept.",
        code="HISTORY_TRUNCATED",
    )
