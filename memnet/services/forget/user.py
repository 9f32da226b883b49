"""Forget a user (spec 17): a queued job that deletes every kind of the user's data a
legal hold does not keep, verifies, and leaves a deletion receipt.

``request`` creates the job state (create-only: a second request while it runs answers
the same job; after it completed, a new request starts a new job) and queues it on
``memnet-forget``. From then on the state blob is the user's tombstone
(:mod:`memnet.services.forget.tombstones`). The worker deletes kind by kind in batches
(:class:`~memnet.services.forget.ledger.Ledger`: exact counts across crashes), index
entries before the event blobs they were derived from, for at most ``job_max_seconds``
per invocation; then it queues itself again with a new run token (a message with an old
token is a duplicate and is dropped). Not earlier than ``forget_grace_seconds`` after
the start it verifies: it lists again, deletes what a write racing the start left
(counted as ``late``), and repeats until a pass finds nothing. Each pass also removes
what the store keeps under the prefix besides blobs (``BlobStore.remove_residue``: the
embedded store's temp files of writes a crash cut short), and the final look counts it.
Then the index and the queue erase what was deleted from their storage
(``erase_deleted``: the embedded SQLite files are rewritten, their WALs emptied), the
receipt is written outside the user's prefix and the job is ``done``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import timedelta
from itertools import islice
from typing import Any

from memnet.domain.callers import Caller
from memnet.domain.errors import Conflict, NotFound
from memnet.domain.layout import export_prefix, forget_job_name, receipt_name, user_prefix
from memnet.domain.timestamps import format_millis, parse_timestamp
from memnet.ports import (
    BlobNotFound,
    BlobStore,
    Clock,
    Condition,
    MessageQueue,
    Residue,
    SearchIndex,
)
from memnet.services.forget.job import ForgetJob, JobMessage
from memnet.services.forget.ledger import (
    FORGET_QUEUE,
    INDEX,
    Job,
    JobSettings,
    JobStore,
    Ledger,
    Superseded,
    new_token,
)
from memnet.services.forget.receipts import accepted, build_receipt, public_view, require_any
from memnet.services.forget.tombstones import Tombstones
from memnet.services.governance.holds import Held, LegalHolds
from memnet.services.records import retrying

# Deletion order: the user's exports first (copies of everything below, kept outside the
# user's prefix: docs/export.md; no hold keeps a copy), then idempotency records (a
# retried write must not replay a response naming deleted data), index entries before
# their event blobs (an entry never outlives its blob), audit last among the documents'
# data, then whatever else is left.
KINDS = (
    "exports",
    "idempotency",
    INDEX,
    "events",
    "snapshots",
    "replays",
    "documents",
    "audit",
    "audit_horizon",
    "other",
)
_PREFIXES = {"audit_horizon": "audit_horizon.json", "other": ""}
_HOLD_KIND = {INDEX: "events", "audit_horizon": "audit"}
# Batches per listing page. On the embedded store a page scans the whole directory
# (memory stays at one page; time is one scan per page), so fewer, larger pages cut the
# scans of a 100k-event directory tenfold for a page of 10 batches in memory.
LIST_BATCHES = 10
RETRY_AFTER_POISON = 300
log = logging.getLogger("memnet.services.forget.user")


def kind_of(relative: str) -> str:
    """The kind of a name relative to the user's prefix."""
    if relative == "audit_horizon.json":
        return "audit_horizon"
    first = relative.split("/", 1)[0]
    return first if first in KINDS and "/" in relative else "other"


def hold_kind(kind: str) -> str:
    return _HOLD_KIND.get(kind, kind)


class ForgetService:
    def __init__(
        self,
        *,
        blobs: BlobStore,
        index: SearchIndex,
        queue: MessageQueue,
        holds: LegalHolds,
        clock: Clock,
        settings: JobSettings,
        tombstones: Tombstones | None = None,
        forget_counters: Callable[[str, str], object] = lambda tenant_id, user_id: None,
    ) -> None:
        self._forget_counters = forget_counters  # the user's quota counters (not memory)
        self._tombstones = tombstones  # told when a forget starts here
        self._blobs, self._index, self._queue = blobs, index, queue
        self._holds, self._clock, self._settings = holds, clock, settings
        self.jobs = JobStore(blobs, clock)
        self.ledger = Ledger(blobs, index, self.jobs)

    @property
    def settings(self) -> JobSettings:
        return self._settings

    def write_receipt(self, state: ForgetJob) -> None:
        """Store the receipt outside the user's prefix; rewritten as it was on a rerun
        (it follows from the finished state: overwriting is the point)."""
        data = json.dumps(build_receipt(state), ensure_ascii=False, sort_keys=True).encode()
        name = receipt_name(state.tenant_id, state.receipt_id)
        self._blobs.write(name, data, Condition.unconditional())

    # -- requests -------------------------------------------------------------------

    def request(self, caller: Caller, tenant_id: str, user_id: str) -> dict[str, Any]:
        """Start forgetting the user (or answer the job already running)."""
        caller.require(tenant_id, "forget")
        name = forget_job_name(tenant_id, user_id)

        def running(job: Job) -> dict[str, Any]:
            self._nudge(job)
            return accepted(job.state)

        def started(job: Job) -> dict[str, Any]:
            if self._tombstones is not None:
                self._tombstones.started(tenant_id, user_id)
            forget_id = job.state.forget_id
            self._holds.log(
                tenant_id,
                "forget_requested",
                caller.caller_id,
                user_id=user_id,
                forget_id=forget_id,
            )
            return accepted(self._send(job).state)

        return self.start(name, lambda: self._new_job(caller, tenant_id, user_id), running, started)

    def start(
        self,
        name: str,
        fresh: Callable[[], ForgetJob],
        running: Callable[[Job], dict[str, Any]],
        started: Callable[[Job], dict[str, Any]],
    ) -> dict[str, Any]:
        """Store a new job ``fresh()`` under ``name`` and answer ``started(job)``, or answer
        ``running(job)`` for the one that is running there; 409 ``FORGET_BUSY`` when
        other requests keep winning the race to store it."""

        def attempt() -> dict[str, Any]:
            job = self.jobs.load(name)
            if job is not None and job.state.status == "running":
                return running(job)
            return started(self.jobs.save(Job(name, fresh(), job.etag if job else None)))

        try:
            return retrying(attempt, on=Superseded)
        except Superseded:
            raise Conflict(
                "The forget job is busy; retry.", code="FORGET_BUSY", retry_after=1
            ) from None

    def status(self, caller: Caller, tenant_id: str, user_id: str) -> dict[str, Any]:
        require_any(caller, tenant_id, ("forget", "admin"))
        job = self.jobs.load(forget_job_name(tenant_id, user_id))
        if job is None:
            raise NotFound("No forget job for this user.", code="FORGET_NOT_FOUND")
        return public_view(job.state)

    def receipt(self, caller: Caller, tenant_id: str, receipt_id: str) -> dict[str, Any]:
        require_any(caller, tenant_id, ("forget", "admin"))
        try:
            blob = self._blobs.read(receipt_name(tenant_id, receipt_id))
        except BlobNotFound:
            raise NotFound("No receipt with this id.", code="RECEIPT_NOT_FOUND") from None
        receipt: dict[str, Any] = json.loads(blob.data)
        return receipt

    def _new_job(self, caller: Caller, tenant_id: str, user_id: str) -> ForgetJob:
        token = secrets.token_hex(12)
        return ForgetJob(
            kind="forget_user",
            forget_id=f"fgt_{token}",
            receipt_id=f"rcpt_{token}",
            tenant_id=tenant_id,
            user_id=user_id,
            requested_by=caller.caller_id,
            started_at=self.jobs.now(),
            status="running",
            phase="deleting",
            run=new_token(),
        )

    def _nudge(self, job: Job) -> None:
        """Queue a running job again when its message was never sent or it stalled."""
        if not job.state.sent or self.stalled(job.state):
            self._send(job)

    def stalled(self, state: ForgetJob) -> bool:
        """Whether a running job's worker went quiet for longer than two invocations (a
        lost message must not leave the user tombstoned for ever)."""
        quiet = self._clock.now() - parse_timestamp(state.updated_at, "updated_at")
        return quiet > timedelta(seconds=2 * self._settings.job_max_seconds + 60)

    def send(self, state: ForgetJob, delay: int = 0) -> None:
        """Queue the message that runs ``state`` (a user's job or a conversation's)."""
        body = json.dumps(state.message().as_json())
        self._queue.send(FORGET_QUEUE, body, delay_seconds=delay)

    def _send(self, job: Job, delay: int = 0) -> Job:
        self.send(job.state, delay)
        if not job.state.sent:
            with contextlib.suppress(Superseded):  # a worker was first: "sent" is a hint
                job = self.jobs.save(job, replace(job.state, sent=True))
        return job

    # -- the worker -----------------------------------------------------------------

    def run(self, message: dict[str, Any]) -> ForgetJob | None:
        """One invocation for ``message``; the job's state afterwards (None: dropped)."""
        sent = JobMessage.from_json(message)
        deadline = time.monotonic() + self._settings.job_max_seconds

        def attempt() -> ForgetJob | None:  # again after a lost race: if still this run's
            job = self.jobs.load(sent.job_name)
            if job is None or job.state.status == "done" or not sent.runs(job.state):
                return None  # gone, finished, or not this run's (a duplicate, or taken over)
            return self._work(job, deadline).state

        try:
            return retrying(attempt, on=Superseded)
        except Superseded:
            return None

    def gave_up(self, message: dict[str, Any]) -> None:
        """The message failed every delivery: queue the job again in five minutes."""
        job = self.jobs.load(JobMessage.from_json(message).job_name)
        if job is not None and job.state.status != "done":
            log.error("forget %s failed every delivery; queued again", job.state.forget_id)
            self._again(job, RETRY_AFTER_POISON)

    def _work(self, job: Job, deadline: float) -> Job:
        held = self._holds.held(job.state.tenant_id, job.state.user_id)
        kept = {kind: h.as_json() for kind, h in sorted(held.items())}
        job = self.ledger.finish_pending(replace(job, state=replace(job.state, kept=kept)))
        if job.state.phase == "deleting":
            job, finished = self._pass(job, held, deadline, late=False)
            if not finished:
                return self._again(job, 0)
            job = self.jobs.save(job, replace(job.state, phase="verifying"))
        while job.state.phase == "verifying":
            wait = self._grace_left(job.state)
            if wait > 0:
                return self._again(job, wait)
            late_before = job.state.late
            job, finished = self._pass(job, held, deadline, late=True)
            if not finished:
                return self._again(job, 0)
            if job.state.late == late_before:
                job = self._verified(job, held)
        return self._finish(job)

    def _pass(
        self, job: Job, held: dict[str, Held], deadline: float, late: bool
    ) -> tuple[Job, bool]:
        """Delete every kind not held, batch by batch; ``(job, False)`` when out of time.
        A kind is listed a page at a time (one page of names in memory, whatever the
        user's size), then listed again until a listing finds nothing."""
        for kind in KINDS:
            if hold_kind(kind) in held:
                continue
            found = True
            while found:
                found = False
                for batch in self._batches(job.state, kind, held):
                    found = True
                    job = self.ledger.delete_batch(job, kind, batch, late)
                    if time.monotonic() >= deadline:
                        return job, False
        self._remove_residue(job.state)
        return job, True

    def _remove_residue(self, state: ForgetJob) -> Residue:
        """Remove what the store keeps under the user's prefix besides blobs: the temp
        files of writes a crash cut short, under held kinds too (a hold keeps data, and
        a write that never landed is none)."""
        found = self._blobs.remove_residue(user_prefix(state.tenant_id, state.user_id))
        if found.files:
            log.info("forget %s removed %d leftover files", state.forget_id, found.files)
        return found

    def _batches(self, state: ForgetJob, kind: str, held: dict[str, Held]) -> Iterator[list[str]]:
        """One listing of ``kind`` in non-empty batches of at most ``page_size`` names:
        index entries from the index's paged listing, blob names from ``list_page``
        pages of :data:`LIST_BATCHES` batches (the next page is listed only after the
        caller is done with this one's batches). Memory: one page, whatever the user's
        size."""
        size = self._settings.page_size
        if kind == INDEX:
            entries = self._index.list_event_ids(state.tenant_id, state.user_id)
            ids = (event_id for _, _, event_id in entries)
            while batch := list(islice(ids, size)):
                yield batch
            return
        prefix = user_prefix(state.tenant_id, state.user_id)
        listed, continuation = prefix + _PREFIXES.get(kind, kind + "/"), None
        if kind == "exports":
            listed = export_prefix(state.tenant_id, state.user_id)
        while True:
            page = self._blobs.list_page(listed, continuation, size * LIST_BATCHES)
            names = [info.name for info in page.items]
            if kind == "other":  # the whole prefix: leave out what a hold keeps
                names = [n for n in names if hold_kind(kind_of(n[len(prefix) :])) not in held]
            for start in range(0, len(names), size):
                yield names[start : start + size]
            continuation = page.continuation
            if continuation is None:
                return

    def _grace_left(self, state: ForgetJob) -> int:
        started = parse_timestamp(state.started_at, "started_at")
        left = started + timedelta(seconds=self._settings.grace_seconds)
        return max(0, math.ceil((left - self._clock.now()).total_seconds()))

    def _verified(self, job: Job, held: dict[str, Held]) -> Job:
        """A pass found nothing: record what a final look at every byte under the prefix
        finds (0 unless a write slipped in this instant, which the tombstone refuses),
        then erase what the index and the queue deleted from their storage."""
        state = job.state
        blobs = sum(len(batch) for batch in self._batches(state, "other", held))
        residue = self._remove_residue(state)
        entries = 0
        if "events" not in held:
            entries = sum(1 for _ in self._index.list_event_ids(state.tenant_id, state.user_id))
        if blobs or entries or residue.files:
            return job  # the next pass deletes them, and looks again
        self._index.erase_deleted()  # a failure fails the invocation: retried whole
        self._queue.erase_deleted()
        now = self.jobs.now()
        verification = {
            "verified_at": now,
            "blobs_remaining": blobs,
            "residue_bytes_remaining": residue.size,
            "index_entries_remaining": entries,
            "recoverable_until": self._recoverable_until(now),
        }
        done = replace(state, phase="finishing", completed_at=now, verification=verification)
        return self.jobs.save(job, done)

    def _recoverable_until(self, completed_at: str) -> str | None:
        """Until when the blob service keeps the deleted blobs recoverable by its
        administrators (Azure's soft delete, ``MEMNET_BLOB_SOFT_DELETE_DAYS``); None when
        a deleted blob is gone at once."""
        days = self._settings.soft_delete_days
        if not days:
            return None
        return format_millis(parse_timestamp(completed_at) + timedelta(days=days))

    def _finish(self, job: Job) -> Job:
        state = job.state
        self._forget_counters(state.tenant_id, state.user_id)
        self.write_receipt(state)
        self._holds.log(
            state.tenant_id,
            "forget_completed",
            "memnet-forget",
            user_id=state.user_id,
            forget_id=state.forget_id,
            receipt_id=state.receipt_id,
        )
        return self.jobs.save(job, replace(state, status="done"))

    def _again(self, job: Job, delay: int) -> Job:
        """Hand the job to a new message. The message goes first: if saving its token
        then fails, this invocation fails, and the queue delivers the current message
        (whose token the state still holds) again; the new one is dropped as stale.
        Saving first would risk the reverse: a token no message carries, and a user
        tombstoned until someone asks again."""
        state = replace(job.state, run=new_token(), sent=True)
        self.send(state, delay)
        return self.jobs.save(job, state)
