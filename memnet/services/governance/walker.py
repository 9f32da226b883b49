"""A resumable, leased walk over every blob under a prefix, one page at a time (issue 11:
sweeps that fit a function timeout, resume where they stopped, and are safe on two
instances at once).

The walk's place lives in ``sweep_state_name(job)``: the continuation of the next page,
the pass it belongs to, and a lease (owner, lease_until). A run claims the lease with an
ETag-conditional write; while another owner's lease is live, the run yields and does
nothing. After each page the run saves its place (renewing the lease) under the same
ETag, so an instance that lost the lease notices at its next save and stops. After the
last page it records the pass as complete and the next run starts a new pass from the
beginning. Work is bounded by ``max_seconds`` (at least one page is always done) and by
the page size, so memory never grows with the number of blobs.

A crash between visiting a page and saving the place repeats that page on the next run:
``visit`` must be idempotent (deleting what is already gone is fine).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timedelta

from memnet.domain.envelope import Json
from memnet.domain.layout import sweep_state_name
from memnet.domain.timestamps import format_millis, parse_timestamp
from memnet.ports import BlobInfo, BlobNotFound, BlobStore, Clock, PreconditionFailed
from memnet.services.records import JsonRecords

Visit = Callable[[list[BlobInfo]], None]
LEASE_SLACK = timedelta(seconds=60)  # beyond max_seconds: one slow page may overrun


@dataclass
class WalkReport:
    """What one run did: pages and blobs visited, where the walk stands, whether this
    run finished a pass, and whether it yielded to another instance's live lease."""

    pages: int = 0
    visited: int = 0
    continuation: str | None = None
    pass_complete: bool = False
    yielded: bool = False
    passes_completed: int = 0

    def as_json(self) -> Json:
        return asdict(self)


@dataclass(frozen=True)
class WalkState:
    """Where a walk stands (``sweep_state_name(job)``): the next page's continuation
    (None: the start), the passes done, and the lease of the run walking it."""

    continuation: str | None = None
    passes_completed: int = 0
    owner: str | None = None
    lease_until: str | None = None
    pass_started_at: str | None = None
    saved_at: str | None = None
    last_pass_completed_at: str | None = None

    @classmethod
    def from_json(cls, stored: Json) -> WalkState:
        return cls(**stored)

    def as_json(self) -> Json:
        found = asdict(self)
        return {k: v for k, v in found.items() if v is not None or k not in _WHEN_SET}

    def leased_to_other(self, owner: str, now: datetime) -> bool:
        if not self.lease_until or self.owner in (None, owner):
            return False
        return parse_timestamp(self.lease_until, "lease_until") > now


_WHEN_SET = frozenset({"owner", "lease_until", "saved_at", "last_pass_completed_at"})


class Walker:
    def __init__(
        self,
        blobs: BlobStore,
        clock: Clock,
        job: str,
        prefix: str = "tenants/",
        page_size: int = 1000,
    ) -> None:
        self._blobs, self._clock, self._job = blobs, clock, job
        self._records, self._name = JsonRecords(blobs), sweep_state_name(job)
        self._prefix, self._page_size = prefix, page_size
        self.owner = f"{job}-{secrets.token_hex(6)}"

    def run(
        self, visit: Visit, max_seconds: float, dry_run: bool = False, limit: int | None = None
    ) -> WalkReport:
        """Visit pages until the pass ends or ``max_seconds`` have passed. ``dry_run``
        walks from the beginning in memory, up to ``limit`` blobs, and never touches the
        persisted state (nor takes the lease)."""
        if dry_run:
            return self._dry_run(visit, max_seconds, limit)
        claimed = self._claim(max_seconds)
        if claimed is None:
            return WalkReport(yielded=True)
        state, etag = claimed
        return self._walk(visit, max_seconds, state, etag)

    def state(self) -> WalkState | None:
        """The persisted state, if any (operators, tests)."""
        found = self._records.read(self._name)
        return WalkState.from_json(found.value) if found else None

    def _walk(self, visit: Visit, max_seconds: float, state: WalkState, etag: str) -> WalkReport:
        report = WalkReport(passes_completed=state.passes_completed)
        deadline = time.monotonic() + max_seconds
        while True:
            page = self._blobs.list_page(self._prefix, state.continuation, self._page_size)
            visit(list(page.items))
            report.pages, report.visited = report.pages + 1, report.visited + len(page.items)
            state = self._advanced(state, page.continuation, max_seconds)
            last = page.continuation is None or time.monotonic() >= deadline
            if last:
                state = replace(state, lease_until=format_millis(self._clock.now()))  # release
            try:
                etag = self._records.save(self._name, state.as_json(), etag)
            except (PreconditionFailed, BlobNotFound):
                report.yielded = True  # our lease lapsed and another instance took over
                return report
            report.continuation = state.continuation
            report.passes_completed = state.passes_completed
            if page.continuation is None:
                report.pass_complete = True
            if last:
                return report

    def _advanced(
        self, state: WalkState, continuation: str | None, max_seconds: float
    ) -> WalkState:
        now = self._clock.now()
        lease_until = format_millis(now + self._lease(max_seconds))
        state = replace(
            state, continuation=continuation, saved_at=format_millis(now), lease_until=lease_until
        )
        if continuation is not None:
            return state
        return replace(
            state,
            passes_completed=state.passes_completed + 1,
            last_pass_completed_at=format_millis(now),
            pass_started_at=None,
        )

    def _dry_run(self, visit: Visit, max_seconds: float, limit: int | None) -> WalkReport:
        report = WalkReport()
        deadline = time.monotonic() + max_seconds
        continuation: str | None = None
        while True:
            size = self._page_size if limit is None else min(self._page_size, limit)
            page = self._blobs.list_page(self._prefix, continuation, max(size, 1))
            items = list(page.items)[: None if limit is None else limit - report.visited]
            visit(items)
            report.pages, report.visited = report.pages + 1, report.visited + len(items)
            continuation = page.continuation
            report.continuation = continuation
            report.pass_complete = continuation is None
            full = limit is not None and report.visited >= limit
            if continuation is None or full or time.monotonic() >= deadline:
                return report

    def _claim(self, max_seconds: float) -> tuple[WalkState, str] | None:
        """Take the lease (ETag-conditional); None when another owner's lease is live or
        another instance claimed it first."""
        now = self._clock.now()
        found = self._records.read(self._name)
        state = WalkState.from_json(found.value) if found else WalkState()
        if found and state.leased_to_other(self.owner, now):
            return None
        lease_until = format_millis(now + self._lease(max_seconds))
        state = replace(state, owner=self.owner, lease_until=lease_until)
        if state.continuation is None and not state.pass_started_at:
            state = replace(state, pass_started_at=format_millis(now))
        try:
            etag = self._records.save(self._name, state.as_json(), found.etag if found else None)
        except (PreconditionFailed, BlobNotFound):
            return None
        return state, etag

    def _lease(self, max_seconds: float) -> timedelta:
        return timedelta(seconds=max_seconds) + LEASE_SLACK
