"""Writing one user's archive (``memnet-export/1``; docs/export.md), kind by kind, part
by part, into a :class:`Sink` (the export's blobs, or a directory on the command line).

Streamed: every kind is read a storage page at a time and written a part at a time
(:class:`~memnet.domain.export_archive.PartWriter`), so memory holds one page, one part
per kind and one document's change ids, never the whole user. Records are copied as
they are stored (the blob's bytes), except a document the caller may not see whole
(its sensitivity classes): that one is its view, with no audit records, and the
manifest says what was left out (``complete: false``).

What the caller may see is what the API would show it: documents and audit with
``read`` (every class for the whole record, else the view); events of the classes it is
cleared for; proposals as ``GET …/proposals`` shows them, and decisions in the audit
records (each also listed in ``proposals`` as ``{"proposal_id", "decision",
"change_id"}``); replay records with ``read``; forget receipts and legal holds with
``admin``; snapshots (decrypted) with ``snapshots``.
"""

from __future__ import annotations

import json
import logging
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from memnet.domain import memory_markdown as markdown
from memnet.domain import sensitivity_views as views
from memnet.domain.callers import ANY, FULL_CLEARANCE, Caller
from memnet.domain.document_model import StoredDocument
from memnet.domain.errors import Forbidden, NotFound
from memnet.domain.expiry import expired
from memnet.domain.export_archive import (
    MANIFEST,
    MARKDOWN,
    Manifest,
    Omission,
    PartWriter,
    line,
)
from memnet.domain.governed import Governed
from memnet.domain.layout import (
    DocumentRef,
    SnapshotRef,
    governance_prefix,
    tenant_policy_name,
    user_prefix,
)
from memnet.domain.profiles import Profile
from memnet.domain.timestamps import parse_timestamp
from memnet.ports import BlobNotFound, BlobStore
from memnet.services.documents.audit import AuditLog
from memnet.services.events.classes import EventClasses
from memnet.services.events.records import EventRecord
from memnet.services.proposals.review import ProposalReview
from memnet.services.replay.snapshots import SnapshotService

log = logging.getLogger("memnet.services.exports.archive")
PROGRESS_RECORDS = 1000  # records between two progress reports (and tombstone checks)
RECENT_EVENTS = 50  # the newest events memory.md shows
MARKDOWN_BYTES = 4 * 1024 * 1024  # memory.md stops (and says so) past this


class Sink(Protocol):
    """Where an archive's files go."""

    def put(self, name: str, data: bytes) -> None: ...


@dataclass(frozen=True)
class Sources:
    """What an archive is read from."""

    blobs: BlobStore
    audit: AuditLog
    classes: EventClasses
    proposals: ProposalReview
    snapshots: SnapshotService
    profile_ids: Callable[[], list[str]]  # every profile of the registry


Progress = Callable[[str, int], None]  # (kind being written, records written so far)


class ArchiveWriter:
    """One archive of ``tenant_id``/``user_id`` for ``caller`` (with ``profile`` deciding
    a document's sensitivity classes; None only for a caller cleared for every class)."""

    def __init__(
        self,
        sources: Sources,
        sink: Sink,
        manifest: Manifest,
        caller: Caller,
        profile: Profile | None,
        progress: Progress = lambda kind, done: None,
    ) -> None:
        self._src, self._sink, self._manifest = sources, sink, manifest
        self._caller, self._profile, self._progress = caller, profile, progress
        self._writers: dict[str, PartWriter] = {}
        self._written = 0
        self._md: list[str] = markdown.title(manifest.user_id, manifest.created_at)
        self._md_size = 0
        self._now = parse_timestamp(manifest.created_at, "created_at")

    @property
    def _tenant(self) -> str:
        return self._manifest.tenant_id

    @property
    def _user(self) -> str:
        return self._manifest.user_id

    def write(self) -> Manifest:
        """Every kind, then ``memory.md`` and last ``manifest.json`` (an archive without
        its manifest is not one: a crash before it leaves nothing that verifies)."""
        self._documents()
        self._events()
        self._proposals()
        self._blobs_of("replays", f"{user_prefix(self._tenant, self._user)}replays/", "read")
        self._receipts()
        self._holds()
        self._snapshots()
        for writer in self._writers.values():
            writer.close()
            self._manifest.parts.extend(writer.parts)
        self._sink.put(MARKDOWN, "\n".join(self._md).encode() + b"\n")
        self._sink.put(MANIFEST, self._manifest.encoded())
        return self._manifest

    # -- plumbing ---------------------------------------------------------------------

    def _add(self, kind: str, record: bytes) -> None:
        writer = self._writers.get(kind)
        if writer is None:
            writer = self._writers[kind] = PartWriter(kind, self._sink.put)
        writer.add(record)
        self._written += 1
        if self._written % PROGRESS_RECORDS == 0:
            self._progress(kind, self._written)

    def _omit(self, kind: str, reason: str) -> None:
        self._manifest.omitted.append(Omission(kind, reason))

    def _say(self, lines: list[str]) -> None:
        """Add lines to memory.md while it is under its bound."""
        size = sum(len(x) + 1 for x in lines)
        if self._md_size + size > MARKDOWN_BYTES:
            if self._md_size <= MARKDOWN_BYTES:
                self._md.append("\n(memory.md stops here: the rest is in the archive's parts)")
                self._md_size = MARKDOWN_BYTES + 1
            return
        self._md += lines
        self._md_size += size

    def _read(self, name: str) -> bytes | None:
        try:
            return self._src.blobs.read(name).data
        except BlobNotFound:
            return None  # gone since it was listed

    def _may(self, role: str) -> bool:
        return self._caller.bound_to(self._tenant) and role in self._caller.roles

    # -- documents and their history ----------------------------------------------------

    def _documents(self) -> None:
        self._say(["## Documents", ""])
        prefix = f"{user_prefix(self._tenant, self._user)}documents/"
        hidden = 0
        for name in self._src.blobs.list_names(prefix):
            namespace, _, path = name[len(prefix) :].partition("/")
            data = self._read(name)
            if data is None or not path:
                continue
            ref = DocumentRef(self._tenant, self._user, namespace, path)
            document = json.loads(data)
            if expired(document, self._now):
                continue  # gone for every read: an expired document stays gone
            if not self._document(ref, document, data):
                hidden += 1
        if hidden:
            self._omit("audit", f"{hidden} documents hold classes above the caller's clearance")

    def _document(self, ref: DocumentRef, document: dict[str, Any], data: bytes) -> bool:
        """Write the document (whole with its history, or the caller's view); False when
        anything of it was left out."""
        governed = self._governed(ref)
        whole = self._caller.acting_clearance() == FULL_CLEARANCE or (
            governed is not None and views.sees_all(self._caller, governed.rules)
        )
        if governed is None and (self._profile is not None or not whole):
            self._omit("documents", f"{ref.namespace}/{ref.path}: no binding of the profile")
            return True  # said on its own line
        shown = (
            document
            if whole
            else views.seen(document, self._caller, None if governed is None else governed.rules)
        )
        envelope = data if whole else line(shown)
        self._add("documents", line({"ref": ref.as_json(), "document": _raw(envelope)}))
        self._say(
            markdown.document(
                ref.namespace, ref.path, shown.get("updated_at"), shown.get("content")
            )
        )
        if whole:
            self._history(ref, StoredDocument("", document))
        return whole

    def _governed(self, ref: DocumentRef) -> Governed | None:
        if self._profile is None:
            return None
        found = self._profile.resolve(ref.namespace, ref.path)
        return None if found is None else Governed.of(self._profile, found[0])

    def _history(self, ref: DocumentRef, stored: StoredDocument) -> None:
        """The document's committed changes, oldest first: the chain's ids are gathered
        (newest first, as the chain is linked), then each record is copied as stored."""
        ids = [
            record.change_id
            for record in self._src.audit.chain(ref, stored.document.get("change_id"))
        ]
        for change_id in reversed(ids):
            data = self._read(ref.audit_name(change_id))
            if data is None:
                continue
            self._add("audit", data)
            decided = (json.loads(data).get("origin") or {}).get("review")
            if decided:
                entry = {
                    "proposal_id": decided.get("proposal_id"),
                    "decision": decided,
                    "change_id": change_id,
                }
                self._add("proposals", line(entry))

    # -- events -------------------------------------------------------------------------

    def _events(self) -> None:
        visible = self._src.classes.visible(self._caller)
        recent: deque[EventRecord] = deque(maxlen=RECENT_EVENTS)
        hidden = 0
        for name in self._src.blobs.list_names(f"{user_prefix(self._tenant, self._user)}events/"):
            data = self._read(name)
            record = _event(data)
            if data is None or record is None:
                continue
            if not record.shown(visible):
                hidden += 1
                continue
            self._add("events", data)
            recent.append(record)
        if hidden:
            self._omit("events", f"{hidden} events of classes above the caller's clearance")
        newest = sorted(recent, key=lambda e: e.timestamp, reverse=True)
        self._say(["## Recent events", "", *(markdown.event(e.as_json()) for e in newest), ""])

    # -- proposals, replays, receipts, holds, snapshots -----------------------------------

    def _proposals(self) -> None:
        """The pending queue of the profile named, or (none named: a caller cleared for
        everything) of every profile it may use, each proposal once."""
        seen: set[Any] = set()
        waiting: list[str] = []
        for profile_id in self._profile_ids():
            queue = self._src.proposals.pending(self._caller, self._tenant, self._user, profile_id)
            if queue.more:
                self._omit("proposals", "a namespace held more documents than the queue reads")
            for entry in queue.proposals:
                if entry.get("proposal_id") not in seen:
                    seen.add(entry.get("proposal_id"))
                    self._add("proposals", line(entry))
                    waiting.append(markdown.proposal(entry))
        self._say(["## Waiting for review", "", *(waiting or ["(nothing)"]), ""])

    def _profile_ids(self) -> list[str]:
        if self._profile is not None:
            return [self._profile.profile_id]
        mine = self._caller.profiles
        return [p for p in self._src.profile_ids() if ANY in mine or p in mine]

    def _blobs_of(self, kind: str, prefix: str, role: str) -> None:
        if not self._may(role):
            self._omit(kind, f"the caller lacks the {role} role")
            return
        for name in self._src.blobs.list_names(prefix):
            data = self._read(name)
            if data is not None:
                self._add(kind, data)

    def _receipts(self) -> None:
        if not self._may("admin"):
            self._omit("receipts", "the caller lacks the admin role")
            return
        prefix = f"{governance_prefix(self._tenant)}receipts/"
        for name in self._src.blobs.list_names(prefix):
            if "/" in name[len(prefix) :]:
                continue  # a receipt's manifest of hashed names, not a receipt
            data = self._read(name)
            if data is not None and json.loads(data).get("user_id") == self._user:
                self._add("receipts", data)

    def _holds(self) -> None:
        if not self._may("admin"):
            self._omit("holds", "the caller lacks the admin role")
            return
        data = self._read(tenant_policy_name(self._tenant))
        policy = json.loads(data) if data else {}
        for held in _holds_of(policy, self._user):
            self._add("holds", line(held))

    def _snapshots(self) -> None:
        if not self._may("snapshots"):
            self._omit("snapshots", "the caller lacks the snapshots role")
            return
        hidden = 0
        for name in self._src.blobs.list_names(
            f"{user_prefix(self._tenant, self._user)}snapshots/"
        ):
            ref = SnapshotRef.of_blob(name)
            if ref is None:
                continue
            try:
                content = self._src.snapshots.read(self._caller, ref)
            except NotFound:
                continue  # gone since it was listed
            except Forbidden:
                hidden += 1  # its replay's class is above the caller's clearance
                continue
            ids = {"conversation_id": ref.conversation_id, "snapshot_id": ref.snapshot_id}
            self._add("snapshots", line({"snapshot": ids, "content": content}))
        if hidden:
            self._omit("snapshots", f"{hidden} snapshots above the caller's clearance")


def _raw(envelope: bytes) -> Any:
    """A stored envelope inside a documents line: parsed back, so that the line is one
    JSON value (its members and their order are the stored ones)."""
    return json.loads(envelope)


def _event(data: bytes | None) -> EventRecord | None:
    if data is None:
        return None
    try:
        return EventRecord.from_json(json.loads(data))
    except (ValueError, TypeError, KeyError):
        return None  # not an event: search and the listing skip it too


def _holds_of(policy: dict[str, Any], user_id: str) -> Iterator[dict[str, Any]]:
    """The tenant's hold and this user's, each with what it covers."""
    tenant = policy.get("tenant")
    if tenant:
        yield {"scope": "tenant", "hold": tenant}
    user = (policy.get("users") or {}).get(user_id)
    if user:
        yield {"scope": "user", "user_id": user_id, "hold": user}
