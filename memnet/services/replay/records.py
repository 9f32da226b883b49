"""Replay records: one blob per snapshot (``.../replays/{conversation}/{snapshot}.json``)
holding the replay's status, the plan it applies and what it wrote (spec 13).

Every change is a read-modify-write under the record's ETag, so two workers holding
the same snapshot (a redelivered message) never lose each other's progress; the
mutations the replay makes are idempotent (add an event id, add a change), so
re-applying one after a lost race is safe.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from memnet.domain.envelope import Json
from memnet.domain.errors import MemnetError
from memnet.domain.layout import SnapshotRef, user_prefix
from memnet.domain.replay_contract import Rejection
from memnet.domain.replay_plan import Applied, PatchRecord, StoredPlan
from memnet.domain.timestamps import format_millis
from memnet.ports import BlobNotFound, BlobStore, Clock
from memnet.services.records import JsonRecords

TERMINAL = frozenset({"applied", "partially_applied", "unresolved", "failed"})


@dataclass(frozen=True)
class Parked:
    """A patch that still conflicted after its rebase (spec 13 step 6). Its states:
    ``retrying`` (a delayed retry is queued) → ``review`` (the retries ran out, or their
    message failed every delivery) → ``discarded`` by an admin, or ``rejected`` when the
    write path refused it outright; applied, it leaves the list."""

    patch_index: int
    state: str
    attempts: int = 0
    reason: str | None = None
    conflict: Any = None
    latest_etag: str | None = None
    next_retry_at: str | None = None
    discarded_by: str | None = None  # set when discarded
    error: str | None = None  # the refusal's code, when rejected

    def waiting(self) -> bool:
        return self.state in ("retrying", "review")

    def as_json(self) -> Json:
        found = asdict(self)
        return {k: v for k, v in found.items() if v is not None or k not in _PARKED_EXTRAS}


_PARKED_EXTRAS = frozenset({"discarded_by", "error"})


@dataclass(frozen=True)
class ReplayRecord:
    """One snapshot's replay (spec 13): its status, the plan it applies (``output``:
    the accepted digests and spec 9.3 patch records) and what it wrote. Stored as JSON
    by :class:`ReplayRecords`; :meth:`as_json` is that stored (and shown) form."""

    replay_id: str
    tenant_id: str
    user_id: str
    conversation_id: str
    snapshot_id: str
    snapshot_uri: str
    created_at: str
    updated_at: str
    status: str = "queued"
    attempts: int = 0
    source: str | None = None
    uploaded_by: str | None = None
    clearance: str | None = None
    extractor: Json | None = None
    profile_id: str | None = None
    events: tuple[str, ...] = ()
    changes: tuple[Applied, ...] = ()
    rejected: tuple[Rejection, ...] = ()
    unresolved: tuple[Parked, ...] = ()
    error: Json | None = None
    output: StoredPlan | None = None
    enqueued: bool = False
    finished: bool = False

    @classmethod
    def from_json(cls, stored: Json) -> ReplayRecord:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in stored.items() if k in known}
        values["events"] = tuple(stored.get("events") or ())
        values["changes"] = tuple(Applied.from_json(c) for c in stored.get("changes") or ())
        values["rejected"] = tuple(Rejection.from_json(r) for r in stored.get("rejected") or ())
        values["unresolved"] = tuple(Parked(**u) for u in stored.get("unresolved") or ())
        output = stored.get("output")
        values["output"] = None if output is None else StoredPlan.from_json(output)
        return cls(**values)

    def as_json(self) -> Json:
        found = asdict(self)
        found.update(
            events=list(self.events),
            changes=[c.as_json() for c in self.changes],
            rejected=[r.as_json() for r in self.rejected],
            unresolved=[u.as_json() for u in self.unresolved],
            output=None if self.output is None else self.output.as_json(),
        )
        return found

    @property
    def ref(self) -> SnapshotRef:
        return SnapshotRef(self.tenant_id, self.user_id, self.conversation_id, self.snapshot_id)

    def parked(self, index: int) -> Parked | None:
        return next((u for u in self.unresolved if u.patch_index == index), None)

    def planned_patch(self, index: int) -> PatchRecord:
        assert self.output is not None
        return self.output.patch(index)

    def settled(self, index: int) -> bool:
        return (
            any(c.patch_index == index for c in self.changes)
            or self.parked(index) is not None
            or any(r.part == "patch" and r.index == index for r in self.rejected)
        )

    def derived_status(self) -> str:
        """The status the record's contents say (the ``running`` and ``queued`` states
        are set by the worker; a finished record's status follows from what it holds)."""
        if self.error is not None:
            return "failed"
        if not self.finished:
            return self.status
        if any(u.waiting() for u in self.unresolved):
            return "unresolved"
        if self.rejected or any(u.state == "discarded" for u in self.unresolved):
            return "partially_applied"
        return "applied"


Change = Callable[[ReplayRecord], ReplayRecord]


class ReplayRecords:
    def __init__(self, blobs: BlobStore, clock: Clock) -> None:
        self._records, self._clock = JsonRecords(blobs), clock

    def load(self, ref: SnapshotRef) -> ReplayRecord | None:
        found = self._records.read(ref.replay_name)
        return None if found is None else ReplayRecord.from_json(found.value)

    def create(self, ref: SnapshotRef, **given: Any) -> bool:
        """Create the record in state ``queued``; False if it exists already."""
        now = self.now()
        record = ReplayRecord(
            replay_id=ref.replay_id,
            tenant_id=ref.tenant_id,
            user_id=ref.user_id,
            conversation_id=ref.conversation_id,
            snapshot_id=ref.snapshot_id,
            snapshot_uri=ref.uri,
            created_at=now,
            updated_at=now,
            **given,
        )
        return self._records.create(ref.replay_name, record.as_json()) is not None

    def update(self, ref: SnapshotRef, change: Change) -> ReplayRecord:
        """Apply ``change`` to the latest record and write it under its ETag, again on
        a lost race (``change`` must be idempotent); :class:`BlobNotFound` if none."""

        def changed(stored: Json | None) -> Json:
            if stored is None:
                raise BlobNotFound(ref.replay_name)
            record = change(ReplayRecord.from_json(stored))
            status = record.derived_status()
            return replace(record, status=status, updated_at=self.now()).as_json()

        # Many event writers of one replay update its record at once: a longer bound.
        updated = self._records.update(ref.replay_name, changed, attempts=20)
        assert updated is not None
        return ReplayRecord.from_json(updated)

    def list(self, tenant_id: str, user_id: str) -> Iterator[ReplayRecord]:
        for stored in self._records.list(f"{user_prefix(tenant_id, user_id)}replays/"):
            yield ReplayRecord.from_json(stored)

    def now(self) -> str:
        return format_millis(self._clock.now())


# -- changes (idempotent: applying one twice changes nothing more) --------------------------


def claim(record: ReplayRecord) -> ReplayRecord:
    return replace(record, status="running", attempts=record.attempts + 1)


def add_change(patch: PatchRecord, body: Json, **extra: Any) -> Change:
    index = patch.patch_index
    change = Applied(
        patch_index=index,
        binding_id=patch.target_binding_id,
        namespace=patch.target_namespace,
        path=patch.target_path,
        change_id=(body.get("document") or {}).get("change_id"),
        etag=body["etag"],
        rebased="rebased_from" in body,
        rebased_from=body.get("rebased_from"),
        redirected_ops=body.get("redirected_ops") or None,
        unchanged=bool(body.get("unchanged")),
        extra=extra,
    )

    def add(record: ReplayRecord) -> ReplayRecord:
        if any(c.patch_index == index for c in record.changes):
            return record
        unresolved = tuple(u for u in record.unresolved if u.patch_index != index)
        return replace(record, changes=(*record.changes, change), unresolved=unresolved)

    return add


def add_rejection(part: str, index: int, error: MemnetError) -> Change:
    entry = Rejection(part, index, error.code, error.message, error.details)

    def add(record: ReplayRecord) -> ReplayRecord:
        if any(r.part == part and r.index == index for r in record.rejected):
            return record
        return replace(record, rejected=(*record.rejected, entry))

    return add


def reject_parked(index: int, error: MemnetError) -> Change:
    """A parked patch the write path now refuses (not a conflict): it leaves the parked
    list as ``rejected`` and is recorded among the rejections, so the replay reads
    ``partially_applied``, never ``applied``."""
    resolve = change_parked(index, lambda u: replace(u, state="rejected", error=error.code))
    rejection = add_rejection("patch", index, error)
    return lambda record: rejection(resolve(record))


def change_parked(index: int, change: Callable[[Parked], Parked | None]) -> Change:
    """``change`` applied to the parked patch ``index`` (if there is one; None from it
    leaves the patch as it is)."""

    def update(record: ReplayRecord) -> ReplayRecord:
        unresolved = tuple(
            (change(u) or u) if u.patch_index == index else u for u in record.unresolved
        )
        return replace(record, unresolved=unresolved)

    return update


def resolve_parked(index: int, state: str, **extra: Any) -> Change:
    return change_parked(index, lambda u: replace(u, state=state, next_retry_at=None, **extra))
