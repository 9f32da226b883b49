"""Replay records: one blob per snapshot (``.../replays/{conversation}/{snapshot}.json``)
holding the replay's status, the plan it applies and what it wrote (spec 13).

Every change is a read-modify-write under the record's ETag, so two workers holding
the same snapshot (a redelivered message) never lose each other's progress; the
mutations the replay makes are idempotent (add an event id, add a change), so
re-applying one after a lost race is safe.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from memnet.domain.errors import MemnetError
from memnet.domain.layout import SnapshotRef, user_prefix
from memnet.domain.timestamps import format_millis
from memnet.ports import BlobNotFound, BlobStore, Clock
from memnet.services.records import JsonRecords

TERMINAL = frozenset({"applied", "partially_applied", "unresolved", "failed"})
Record = dict[str, Any]


class ReplayRecords:
    def __init__(self, blobs: BlobStore, clock: Clock) -> None:
        self._records, self._clock = JsonRecords(blobs), clock

    def load(self, ref: SnapshotRef) -> Record | None:
        found = self._records.read(ref.replay_name)
        return None if found is None else found.value

    def create(self, ref: SnapshotRef, **fields: Any) -> bool:
        """Create the record in state ``queued``; False if it exists already."""
        now = self.now()
        record: Record = {
            "replay_id": ref.replay_id,
            **ref.as_json(),
            "snapshot_uri": ref.uri,
            "status": "queued",
            "attempts": 0,
            "extractor": None,
            "profile_id": None,
            "created_at": now,
            "updated_at": now,
            "events": [],
            "changes": [],
            "rejected": [],
            "unresolved": [],
            "error": None,
            "output": None,
            **fields,
        }
        return self._records.create(ref.replay_name, record) is not None

    def update(self, ref: SnapshotRef, mutate: Callable[[Record], None]) -> Record:
        """Apply ``mutate`` to the latest record and write it under its ETag, again on
        a lost race (``mutate`` must be idempotent); :class:`BlobNotFound` if none."""

        def change(record: Record | None) -> Record:
            if record is None:
                raise BlobNotFound(ref.replay_name)
            mutate(record)
            return {**record, "status": status_of(record), "updated_at": self.now()}

        # Many event writers of one replay update its record at once: a longer bound.
        updated = self._records.update(ref.replay_name, change, attempts=20)
        assert updated is not None
        return updated

    def list(self, tenant_id: str, user_id: str) -> Iterator[Record]:
        return self._records.list(f"{user_prefix(tenant_id, user_id)}replays/")

    def now(self) -> str:
        return format_millis(self._clock.now())


def status_of(record: Record) -> str:
    """The status the record's contents say (the ``running`` and ``queued`` states are
    set by the worker; a finished record's status follows from what it holds)."""
    if record.get("error") is not None:
        return "failed"
    if not record.get("finished"):
        return str(record.get("status", "queued"))
    if any(u.get("state") in ("retrying", "review") for u in record.get("unresolved", [])):
        return "unresolved"
    discarded = any(u.get("state") == "discarded" for u in record.get("unresolved", []))
    if record.get("rejected") or discarded:
        return "partially_applied"
    return "applied"


# -- mutations (idempotent: applying one twice changes nothing more) ------------------------


def claim(record: Record) -> None:
    record["status"] = "running"
    record["attempts"] = record.get("attempts", 0) + 1


def settled(record: Record, index: int) -> bool:
    return (
        any(c["patch_index"] == index for c in record["changes"])
        or any(u["patch_index"] == index for u in record["unresolved"])
        or any(r["part"] == "patch" and r["index"] == index for r in record["rejected"])
    )


def unresolved_entry(record: Record | None, index: int) -> dict[str, Any] | None:
    if record is None:
        return None
    return next((u for u in record["unresolved"] if u["patch_index"] == index), None)


def add_change(patch: dict[str, Any], body: dict[str, Any], **extra: Any) -> Any:
    index = patch["patch_index"]
    change = {
        "patch_index": index,
        "binding_id": patch["target_binding_id"],
        "namespace": patch["target_namespace"],
        "path": patch["target_path"],
        "change_id": body.get("document", {}).get("change_id"),
        "etag": body["etag"],
        **({"rebased_from": body["rebased_from"]} if "rebased_from" in body else {}),
        **({"redirected_ops": body["redirected_ops"]} if body.get("redirected_ops") else {}),
        **({"unchanged": True} if body.get("unchanged") else {}),
        **extra,
    }

    def add(record: Record) -> None:
        if any(c["patch_index"] == index for c in record["changes"]):
            return
        record["changes"].append(change)
        record["unresolved"] = [u for u in record["unresolved"] if u["patch_index"] != index]

    return add


def add_rejection(part: str, index: int, error: MemnetError) -> Any:
    entry = {
        "part": part,
        "index": index,
        "code": error.code,
        "reason": error.message,
        "details": error.details,
    }

    def add(record: Record) -> None:
        if not any(r["part"] == part and r["index"] == index for r in record["rejected"]):
            record["rejected"].append(entry)

    return add


def reject_parked(index: int, error: MemnetError) -> Any:
    """A parked patch the write path now refuses (not a conflict): it leaves the parked
    list as ``rejected`` and is recorded among the rejections, so the replay reads
    ``partially_applied``, never ``applied``."""
    rejection = add_rejection("patch", index, error)
    resolve = resolve_entry(index, "rejected", error=error.code)

    def update(record: Record) -> None:
        resolve(record)
        rejection(record)

    return update


def resolve_entry(index: int, state: str, **extra: Any) -> Any:
    def update(record: Record) -> None:
        entry = unresolved_entry(record, index)
        if entry is not None:
            entry.update(state=state, next_retry_at=None, **extra)

    return update
