"""Conversation snapshots (spec 7.2, 13, 16.2): upload, encrypted storage, and the start
of their replay.

A snapshot is stored create-only at its spec 7.2 path, sealed (AES-256-GCM under a
per-snapshot data key wrapped by the configured :class:`~memnet.ports.KeyProvider`;
:mod:`memnet.services.replay.sealing`), with the blob name as associated data, so the blob
holds no plaintext and opens only at its own path. Re-uploading the same transcript
under the same id is the same upload; another transcript under that id is 409.

Starting a replay creates the replay record (create-only, state ``queued``) and sends
one message to the replay queue. The upload route and the blob trigger both start it;
the record is created once, and the worker treats a message for a finished replay as
done, so a snapshot is replayed once however many messages name it.
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from typing import Any

from memnet.domain import sensitivity_views as views
from memnet.domain.callers import Caller
from memnet.domain.errors import BadRequest, Conflict, MemnetError, NotFound, Unavailable
from memnet.domain.identifiers import check_identifier
from memnet.domain.layout import SnapshotRef
from memnet.domain.transcript import Transcript, parse_transcript
from memnet.ports import (
    BlobNotFound,
    BlobStore,
    BlobTooLarge,
    Condition,
    KeyProvider,
    MessageQueue,
    PreconditionFailed,
)
from memnet.services.forget.tombstones import Tombstones
from memnet.services.profiles.registry import ProfileRegistry
from memnet.services.replay.records import ReplayRecord, ReplayRecords
from memnet.services.replay.sealing import (
    MAX_SEALED_BYTES,
    SealedBlobError,
    open_sealed,
    seal,
    too_large,
)
from memnet.services.replay.writes import REPLAY_QUEUE, uploader_clearance

log = logging.getLogger(__name__)


class SnapshotService:
    def __init__(
        self,
        *,
        blobs: BlobStore,
        keys: KeyProvider,
        queue: MessageQueue,
        records: ReplayRecords,
        registry: ProfileRegistry,
        tombstones: Tombstones | None = None,
    ) -> None:
        self._blobs, self._keys, self._queue = blobs, keys, queue
        self._records, self._registry = records, registry
        self._tombstones = tombstones  # None only for a service built alone in a test

    def upload(self, caller: Caller, ref: SnapshotRef, body: Any) -> tuple[bool, ReplayRecord]:
        """Store the transcript and start its replay; ``(created, replay record)``."""
        caller.require(ref.tenant_id, "write")
        self.check_tombstone(ref)
        transcript = parse_transcript(body)
        profile = self._registry.for_caller(caller, transcript.profile_id)
        if transcript.service_id is not None:
            caller.require_service(transcript.service_id)
        stored = Transcript(
            transcript.messages,
            transcript.service_id or caller.caller_id,
            profile.profile_id,
            transcript.project_hint,
            transcript.metadata,
        )
        created = self._store(ref, stored)
        record = self.start(ref, "upload", caller.caller_id, uploader_clearance(caller))
        self.check_clearance(caller, record)  # an upload of an existing snapshot shows it
        return created, record

    def restore(self, ref: SnapshotRef, content: Any) -> None:
        """Seal a transcript read from another deployment (an import, issue 27) with this
        deployment's key, create-only (already there as it is: the same write); 409
        ``SNAPSHOT_EXISTS`` when another transcript holds the id. Its replay is not
        started: the import brings the replay record (a blob trigger that sees the
        blob finds that record and starts nothing)."""
        self._store(ref, parse_transcript(content))

    def _store(self, ref: SnapshotRef, transcript: Transcript) -> bool:
        plaintext = _dump(transcript.as_json())
        try:
            sealed = seal(plaintext, ref.blob_name.encode(), self._keys)
        except SealedBlobError as error:
            raise _key_trouble(error) from error
        try:
            self._blobs.write(ref.blob_name, sealed, Condition.create_only())
        except PreconditionFailed:
            if self._stored_text(ref) != plaintext:
                raise Conflict(
                    "A snapshot with this id exists with another transcript.",
                    code="SNAPSHOT_EXISTS",
                    snapshot_id=ref.snapshot_id,
                ) from None
            return False
        return True

    def _stored_text(self, ref: SnapshotRef) -> bytes | None:
        """The canonical transcript stored under ``ref``; None when it cannot be read
        (another writer's blob, a key since lost): then it is not the same upload."""
        try:
            return _dump(self.open(ref).as_json())
        except SealedBlobError as error:
            if error.transient:
                raise _key_trouble(error) from error
            return None
        except (BadRequest, ValueError):
            return None

    def open(self, ref: SnapshotRef) -> Transcript:
        """The decrypted transcript (:class:`~memnet.services.replay.sealing.SealedBlobError`
        when it cannot be opened; :class:`~memnet.ports.BlobNotFound` when absent).

        The blob is read with the bound :data:`~memnet.services.replay.sealing.MAX_SEALED_BYTES`:
        a writer straight to storage (the blob trigger's path) sets its size, so a
        larger one is refused by the store before it is read (``SNAPSHOT_TOO_LARGE``)."""
        try:
            sealed = self._blobs.read(ref.blob_name, max_bytes=MAX_SEALED_BYTES).data
        except BlobTooLarge as error:
            raise too_large(error.size, error.max_bytes) from error
        return parse_transcript(json.loads(open_sealed(sealed, ref.blob_name.encode(), self._keys)))

    def read(self, caller: Caller, ref: SnapshotRef) -> dict[str, Any]:
        """The transcript, for callers holding the dedicated ``snapshots`` role."""
        caller.require(ref.tenant_id, "snapshots")
        self.check_clearance(caller, self._records.load(ref))  # what its replay could see
        try:
            return self.open(ref).as_json()
        except BlobNotFound:
            raise NotFound("Snapshot does not exist.", code="SNAPSHOT_NOT_FOUND") from None
        except SealedBlobError as error:
            raise _key_trouble(error) from error

    def start(
        self,
        ref: SnapshotRef,
        source: str,
        uploaded_by: str | None = None,
        clearance: str | None = None,
    ) -> ReplayRecord:
        """Create the replay record and queue the replay, once per snapshot. The record
        says whether its message was sent; one still ``queued`` without that (the send
        failed, or the process died before it) is sent again by the next start."""
        self.check_tombstone(ref)
        self._records.create(ref, source=source, uploaded_by=uploaded_by, clearance=clearance)
        record = self._records.load(ref)
        assert record is not None  # created now or before; records are not deleted here
        if record.status == "queued" and not record.enqueued:
            self._queue.send(REPLAY_QUEUE, json.dumps({"kind": "replay", **ref.as_json()}))
            record = self._records.update(ref, lambda r: replace(r, enqueued=True))
        return record

    def exists(self, ref: SnapshotRef) -> bool:
        return any(name == ref.blob_name for name in self._blobs.list_names(ref.blob_name))

    def check_tombstone(self, ref: SnapshotRef) -> None:
        """409 while the snapshot's user is being (or was just) forgotten (spec 17)."""
        if self._tombstones is not None:
            self._tombstones.check(ref.tenant_id, ref.user_id)

    def start_from_blob(self, name: str) -> ReplayRecord | None:
        """The blob trigger's entry: start the replay of the snapshot blob ``name``
        (container-relative); None when the name is not a snapshot's."""
        ref = snapshot_ref_of(name)
        if ref is None:
            return None
        try:
            self.check_tombstone(ref)
        except Conflict:  # a retry would meet the same tombstone; the forget deletes the blob
            log.warning("snapshot blob of a user being forgotten not replayed: %s", name)
            return None
        return self.start(ref, "blob_trigger")

    def status(self, caller: Caller, ref: SnapshotRef) -> ReplayRecord:
        caller.require(ref.tenant_id, "read")
        record = self._records.load(ref)
        if record is None:
            raise NotFound("No replay for this snapshot.", code="REPLAY_NOT_FOUND")
        if record.profile_id:  # it shows what the replay planned for that profile
            caller.require_profile(record.profile_id)
        self.check_clearance(caller, record)
        return record

    def check_clearance(self, caller: Caller, record: ReplayRecord | None) -> None:
        """A replay's plan and outcomes hold what its uploader could see: only a caller
        with at least that clearance reads them (docs/profiles.md "Sensitivity")."""
        profile = self._registry.get(record.profile_id or "") if record else None
        if record is not None and profile is not None:
            views.require_clearance_of(caller, profile, record.clearance)


def snapshot_ref_of(name: str) -> SnapshotRef | None:
    """The snapshot a blob name addresses, with every id checked; None otherwise."""
    ref = SnapshotRef.of_blob(name)
    if ref is None:
        return None
    try:
        for kind, value in ref.as_json().items():
            check_identifier(kind, value)
    except BadRequest:
        return None
    return ref


def _key_trouble(error: SealedBlobError) -> MemnetError:
    """503 when the key provider may recover (retry); else a 500 naming the code."""
    if error.transient:
        return Unavailable("The snapshot key is unavailable; retry.", code=error.code)
    return MemnetError("The snapshot cannot be sealed or opened.", code=error.code)


def _dump(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
