"""What forget jobs share: their state blob (ETag read-modify-write) and the ledger that
deletes a batch of names and counts it exactly, whatever crashes in between (spec 17).

A batch is first recorded in the job's state (``pending``: its kind and names), then
deleted (a name already gone is fine), then its manifest blob is written (the sha256 of
each name, never the name) and only then folded into the per-kind counts and hash
chains, clearing ``pending`` in the same ETag write. A rerun that finds a recorded batch
finishes it first, so every name is counted once: a crash before the record leaves the
names in place for the next listing, a crash after it is finished by the rerun.

The hash chain of a kind starts at 32 zero bytes; each deleted name ``n`` moves it to
``sha256(chain || sha256(utf8(n)))``, in deletion order. Names are container-relative
blob names; an index entry's name is its event id.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import secrets
from dataclasses import dataclass, replace

from memnet.domain.layout import export_prefix, receipt_manifest_name, user_prefix
from memnet.domain.timestamps import format_millis
from memnet.ports import (
    BlobNotFound,
    BlobStore,
    Clock,
    Condition,
    PreconditionFailed,
    SearchIndex,
)
from memnet.services.forget.job import Batch, ForgetJob, counted
from memnet.services.records import JsonRecords

FORGET_QUEUE = "memnet-forget"
FORGET_CALLER = "memnet-forget"
INDEX = "index"  # the kind of search index entries (they follow the "events" hold)


@dataclass(frozen=True)
class JobSettings:
    """What bounds a forget job (from the settings ``MEMNET_JOB_MAX_SECONDS``,
    ``MEMNET_SWEEP_PAGE_SIZE``, ``MEMNET_FORGET_GRACE_SECONDS`` and
    ``MEMNET_BLOB_SOFT_DELETE_DAYS``)."""

    job_max_seconds: int = 240  # work one invocation does before it queues itself again
    page_size: int = 1000  # names per batch, and per manifest blob
    grace_seconds: int = 60  # verification starts not earlier than this after the start
    soft_delete_days: int = 0  # the blob service keeps deleted blobs this long (Azure)


class Superseded(Exception):
    """Another worker saved the job first; this one stops (its work is not lost: the
    other holds the state, and a recorded batch is finished by whoever runs next)."""


@dataclass(frozen=True)
class Job:
    """One job's state and the ETag it was read at (None: not stored yet)."""

    name: str
    state: ForgetJob
    etag: str | None


class JobStore:
    def __init__(self, blobs: BlobStore, clock: Clock) -> None:
        self._records, self._clock = JsonRecords(blobs), clock

    def load(self, name: str) -> Job | None:
        found = self._records.read(name)
        return None if found is None else Job(name, ForgetJob.from_json(found.value), found.etag)

    def save(self, job: Job, state: ForgetJob | None = None) -> Job:
        """Write ``state`` (default: the job's own) under the job's ETag (create-only
        when new); :class:`Superseded` if another writer got there first."""
        state = replace(state or job.state, updated_at=self.now())
        try:
            etag = self._records.save(job.name, state.as_json(), job.etag)
        except PreconditionFailed as exc:
            raise Superseded(job.name) from exc
        return Job(job.name, state, etag)

    def now(self) -> str:
        return format_millis(self._clock.now())


def new_token() -> str:
    return secrets.token_hex(8)


def name_sha256(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()


class Ledger:
    """Deletes recorded batches and counts them (see the module doc)."""

    def __init__(self, blobs: BlobStore, index: SearchIndex, jobs: JobStore) -> None:
        self._blobs, self._index, self._jobs = blobs, index, jobs

    def delete_batch(self, job: Job, kind: str, names: list[str], late: bool = False) -> Job:
        pending = Batch(kind, tuple(names), late)
        return self.finish_pending(self._jobs.save(job, replace(job.state, pending=pending)))

    def finish_pending(self, job: Job) -> Job:
        pending = job.state.pending
        if pending is None:
            return job
        self._remove(job.state, pending)
        self._write_manifest(job.state, pending)
        return self._jobs.save(job, counted(job.state, pending))

    def _remove(self, state: ForgetJob, batch: Batch) -> None:
        if batch.kind == INDEX:
            self._index.delete(state.tenant_id, state.user_id, list(batch.names))
            return
        prefix = user_prefix(state.tenant_id, state.user_id)
        if batch.kind == "exports":  # the user's archives, kept beside its governance records
            prefix = export_prefix(state.tenant_id, state.user_id)
        if batch.kind == "events":  # an index entry never outlives its event blob
            ids = [n.rsplit("/", 1)[-1].removesuffix(".json") for n in batch.names]
            self._index.delete(state.tenant_id, state.user_id, ids)
        for name in batch.names:
            if not name.startswith(prefix):  # never outside the user: a corrupt state
                raise ValueError(f"forget batch names a blob outside the user: {name!r}")
            with contextlib.suppress(BlobNotFound):  # deleted before a crash: counted once
                self._blobs.delete(name)

    def _write_manifest(self, state: ForgetJob, batch: Batch) -> None:
        """The batch's name hashes beside the receipt; rewritten as it was on a rerun
        (the content follows from the recorded batch: overwriting is the point)."""
        manifest = {
            "receipt_id": state.receipt_id,
            "seq": state.seq,
            "kind": batch.kind,
            "late": batch.late,
            "name_sha256": [name_sha256(n) for n in batch.names],
        }
        name = receipt_manifest_name(state.tenant_id, state.receipt_id, state.seq)
        data = json.dumps(manifest, separators=(",", ":")).encode()
        self._blobs.write(name, data, Condition.unconditional())
