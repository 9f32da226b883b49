"""The forget tombstone (spec 17): writes for a user being forgotten are refused.

A forget job's state blob (:func:`~memnet.domain.layout.forget_job_name`) is also its
tombstone. From the moment the job is created until ``quiet_seconds`` after it
completed, every write path of the user calls :meth:`Tombstones.check` first, so nothing
is recreated behind the job: 409 ``FORGET_IN_PROGRESS`` while it runs, 409
``USER_RECENTLY_FORGOTTEN`` in the quiet period after it, each with Retry-After. The
check is one blob read (a miss, for every user never forgotten). A write that passed the
check just before the job started and lands after the job listed the prefix is what the
job's verification scan, ``forget_grace_seconds`` later, exists to catch.

That miss is remembered for ``cache_seconds`` (bootstrap: a quarter of the grace, at most
5 s; 0 with no grace), so a busy user's writes do not each read it: a write that
trusts a remembered miss is such a write that passed the check a little earlier, and the
bound keeps it well inside the grace. Only misses are remembered, and a forget started
on this instance drops its user's at once (:meth:`Tombstones.started`), so here its
writes are refused from its 202 on; another instance refuses them within
``cache_seconds`` (docs/decisions.md, "The forget tombstone's miss, remembered").
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from datetime import timedelta

from memnet.domain.errors import Conflict
from memnet.domain.layout import forget_job_name
from memnet.domain.timestamps import parse_timestamp
from memnet.ports import BlobStore, Clock
from memnet.services.forget.job import Status
from memnet.services.records import JsonRecords

MAX_REMEMBERED = 100_000  # users whose miss is remembered at once


@dataclass(frozen=True)
class Tombstone:
    """What a write path reads of a forget job's state (only this: the check runs on
    every write, and a job's state may hold a batch of a thousand names)."""

    status: Status | None
    forget_id: str | None
    completed_at: str | None


class Tombstones:
    def __init__(
        self,
        blobs: BlobStore,
        clock: Clock,
        quiet_seconds: int,
        retry_seconds: int = 60,
        cache_seconds: float = 0.0,
    ) -> None:
        self._records, self._clock = JsonRecords(blobs), clock
        self._quiet = timedelta(seconds=quiet_seconds)
        self._retry = max(1, retry_seconds)
        self._cache_seconds = cache_seconds
        # monotonic times: when the read that missed began; when a forget started here
        self._absent: dict[tuple[str, str], float] = {}
        self._started: dict[tuple[str, str], float] = {}

    def started(self, tenant_id: str, user_id: str) -> None:
        """A forget of the user was just stored here: no miss read before now counts
        (not even one a check still in flight remembers after this call)."""
        if len(self._started) >= MAX_REMEMBERED:
            self._started.clear()
            self._absent.clear()
        self._started[(tenant_id, user_id)] = time.monotonic()

    def check(self, tenant_id: str, user_id: str) -> None:
        """Raise 409 if a forget of the user runs or completed less than the quiet
        period ago; return otherwise (one blob read)."""
        job = self._job(tenant_id, user_id)
        if job is None:
            return
        if job.status != "done" or job.completed_at is None:
            raise Conflict(
                "This user is being forgotten; writes are refused until it completes.",
                code="FORGET_IN_PROGRESS",
                retry_after=self._retry,
                forget_id=job.forget_id,
            )
        completed = parse_timestamp(job.completed_at, "completed_at")
        left = self._quiet - (self._clock.now() - completed)
        if left > timedelta(0):
            raise Conflict(
                "This user was forgotten recently; writes are refused for a quiet period.",
                code="USER_RECENTLY_FORGOTTEN",
                retry_after=max(1, math.ceil(left.total_seconds())),
                forget_id=job.forget_id,
                quiet_until=(completed + self._quiet).isoformat().replace("+00:00", "Z"),
            )

    def running(self, tenant_id: str, user_id: str) -> bool:
        """Whether a forget of the user runs (one blob read, never remembered)."""
        job = self._read(tenant_id, user_id)
        return job is not None and job.status != "done"

    def _job(self, tenant_id: str, user_id: str) -> Tombstone | None:
        """The user's job, or None; a miss remembered for ``cache_seconds``."""
        user, begun = (tenant_id, user_id), time.monotonic()
        missed = self._absent.get(user, -math.inf)
        if begun - missed < self._cache_seconds and missed > self._started.get(user, -math.inf):
            return None
        found = self._read(tenant_id, user_id)
        if found is None and self._cache_seconds > 0:
            if len(self._absent) >= MAX_REMEMBERED:
                self._absent.clear()  # a bound, not an eviction policy: misses are cheap
            self._absent[user] = begun
        return found

    def _read(self, tenant_id: str, user_id: str) -> Tombstone | None:
        found = self._records.read(forget_job_name(tenant_id, user_id))
        if found is None:
            return None
        return Tombstone(*(found.value.get(k) for k in ("status", "forget_id", "completed_at")))
