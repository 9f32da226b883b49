"""Listing a user's snapshots (issue 27, item 7; docs/api.md "Listing what exists"):
``GET .../snapshots?limit=&after=``, in name order (conversation id, then snapshot id),
paged by the storage marker as events are (:mod:`memnet.services.events.paging`).

Each item says what exists, never what it holds: the snapshot's ids, when its blob was
last written, its stored (encrypted) size, and its replay's id and status from the
replay record (None when there is no record, e.g. a blob written straight to storage
whose trigger has not run). A page costs one listing call and one replay-record read
per snapshot; the transcript is never read.

Role ``snapshots`` (the transcripts' own role) or ``admin``: a transcript's existence
and size are about the conversation itself, which ``read`` does not open.
"""

from __future__ import annotations

from dataclasses import dataclass

from memnet.domain.callers import Caller
from memnet.domain.layout import SnapshotRef, user_prefix
from memnet.domain.timestamps import format_millis
from memnet.ports import BlobInfo, BlobStore
from memnet.services.documents.listing import decode_token, encode_token, page_at
from memnet.services.forget.receipts import require_any
from memnet.services.replay.records import ReplayRecords

ROLES = ("snapshots", "admin")


@dataclass(frozen=True)
class ListedSnapshot:
    conversation_id: str
    snapshot_id: str
    stored_at: str
    size: int | None
    replay_id: str
    replay_status: str | None


@dataclass(frozen=True)
class SnapshotPage:
    snapshots: tuple[ListedSnapshot, ...]
    after: str | None


class SnapshotListing:
    def __init__(self, blobs: BlobStore, records: ReplayRecords) -> None:
        self._blobs, self._records = blobs, records

    def list_snapshots(
        self, caller: Caller, tenant_id: str, user_id: str, limit: int, after: str | None
    ) -> SnapshotPage:
        require_any(caller, tenant_id, ROLES)
        marker = decode_token(after, "snapshots", "after")
        prefix = f"{user_prefix(tenant_id, user_id)}snapshots/"
        page = page_at(self._blobs, prefix, marker, limit, "after")
        listed = (self._item(info, tenant_id, user_id) for info in page.items)
        found = tuple(item for item in listed if item is not None)
        return SnapshotPage(found, encode_token("snapshots", page.continuation))

    def _item(self, info: BlobInfo, tenant_id: str, user_id: str) -> ListedSnapshot | None:
        ref = SnapshotRef.of_blob(info.name)
        if ref is None or (ref.tenant_id, ref.user_id) != (tenant_id, user_id):
            return None  # nothing else is written there
        record = self._records.load(ref)
        return ListedSnapshot(
            conversation_id=ref.conversation_id,
            snapshot_id=ref.snapshot_id,
            stored_at=format_millis(info.last_modified),
            size=info.size,
            replay_id=ref.replay_id,
            replay_status=None if record is None else record.status,
        )
