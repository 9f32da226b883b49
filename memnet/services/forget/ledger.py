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
from dataclasses import dataclass
from typing import Any

from memnet.domain.layout import receipt_manifest_name, user_prefix
from memnet.domain.timestamps import format_millis
from memnet.ports import (
    BlobNotFound,
    BlobStore,
    Clock,
    Condition,
    PreconditionFailed,
    SearchIndex,
)
from memnet.services.records import JsonRecords

FORGET_QUEUE = "memnet-forget"
FORGET_CALLER = "memnet-forget"
ZERO_CHAIN = "00" * 32
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


@dataclass
class Job:
    """One job's state and the ETag it was read at (None: not stored yet)."""

    name: str
    state: dict[str, Any]
    etag: str | None


class JobStore:
    def __init__(self, blobs: BlobStore, clock: Clock) -> None:
        self._records, self._clock = JsonRecords(blobs), clock

    def load(self, name: str) -> Job | None:
        found = self._records.read(name)
        return None if found is None else Job(name, found.value, found.etag)

    def save(self, job: Job) -> Job:
        """Write under the job's ETag (create-only when new); :class:`Superseded` if
        another writer got there first."""
        job.state["updated_at"] = self.now()
        try:
            etag = self._records.save(job.name, job.state, job.etag)
        except PreconditionFailed as exc:
            raise Superseded(job.name) from exc
        return Job(job.name, job.state, etag)

    def now(self) -> str:
        return format_millis(self._clock.now())


def new_token() -> str:
    return secrets.token_hex(8)


def chained(chain: str, names: list[str]) -> str:
    """The kind's hash chain after deleting ``names`` in order (see the module doc)."""
    value = bytes.fromhex(chain)
    for name in names:
        value = hashlib.sha256(value + hashlib.sha256(name.encode()).digest()).digest()
    return value.hex()


def name_sha256(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()


class Ledger:
    """Deletes recorded batches and counts them (see the module doc)."""

    def __init__(self, blobs: BlobStore, index: SearchIndex, jobs: JobStore) -> None:
        self._blobs, self._index, self._jobs = blobs, index, jobs

    def delete_batch(self, job: Job, kind: str, names: list[str], late: bool = False) -> Job:
        job.state["pending"] = {"kind": kind, "names": names, "late": late}
        return self.finish_pending(self._jobs.save(job))

    def finish_pending(self, job: Job) -> Job:
        pending = job.state.get("pending")
        if not pending:
            return job
        kind, names = pending["kind"], pending["names"]
        self._remove(job.state, kind, names)
        self._write_manifest(job.state, pending)
        deleted = job.state["deleted"].setdefault(kind, {"count": 0, "chain": ZERO_CHAIN})
        deleted["count"] += len(names)
        deleted["chain"] = chained(deleted["chain"], names)
        if pending.get("late"):
            job.state["late"] = job.state.get("late", 0) + len(names)
        job.state["seq"] += 1
        job.state["pending"] = None
        return self._jobs.save(job)

    def _remove(self, state: dict[str, Any], kind: str, names: list[str]) -> None:
        if kind == INDEX:
            self._index.delete(state["tenant_id"], state["user_id"], names)
            return
        prefix = user_prefix(state["tenant_id"], state["user_id"])
        if kind == "events":  # an index entry never outlives its event blob
            ids = [n.rsplit("/", 1)[-1].removesuffix(".json") for n in names]
            self._index.delete(state["tenant_id"], state["user_id"], ids)
        for name in names:
            if not name.startswith(prefix):  # never outside the user: a corrupt state
                raise ValueError(f"forget batch names a blob outside the user: {name!r}")
            with contextlib.suppress(BlobNotFound):  # deleted before a crash: counted once
                self._blobs.delete(name)

    def _write_manifest(self, state: dict[str, Any], pending: dict[str, Any]) -> None:
        """The batch's name hashes beside the receipt; rewritten as it was on a rerun
        (the content follows from the recorded batch: overwriting is the point)."""
        manifest = {
            "receipt_id": state["receipt_id"],
            "seq": state["seq"],
            "kind": pending["kind"],
            "late": bool(pending.get("late")),
            "name_sha256": [name_sha256(n) for n in pending["names"]],
        }
        name = receipt_manifest_name(state["tenant_id"], state["receipt_id"], state["seq"])
        data = json.dumps(manifest, separators=(",", ":")).encode()
        self._blobs.write(name, data, Condition.unconditional())
