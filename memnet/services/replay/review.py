"""Parked replay patches (spec 13 step 6, 14 step 5): a patch that still conflicts after
its one rebase is recorded as unresolved and retried from the replay queue with
exponential backoff (``MEMNET_REPLAY_RETRY_BASE_SECONDS`` doubling per attempt), each
retry rebasing it from its base once more; after ``MEMNET_REPLAY_RETRY_LIMIT`` attempts
it waits for review. An admin may then retry it on the latest version (checked like
any write) or discard it. Each retry message names its attempt, so a duplicate is
ignored, and the record is updated under its ETag."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta

from memnet.domain.callers import Caller
from memnet.domain.errors import EtagMismatch, Forbidden, MemnetError, NotFound
from memnet.domain.layout import DocumentRef, SnapshotRef
from memnet.domain.timestamps import format_millis
from memnet.ports import Clock, MessageQueue
from memnet.services.documents.service import DocumentService
from memnet.services.replay.records import (
    Parked,
    ReplayRecord,
    ReplayRecords,
    add_change,
    change_parked,
    reject_parked,
    resolve_parked,
)
from memnet.services.replay.writes import REPLAY_QUEUE, command, replay_caller

MAX_RETRY_DELAY_SECONDS = 24 * 3600  # well inside a queue message's 7-day lifetime


class RetryTooEarly(Exception):
    """A retry message arrived before the record says its attempt is due (raised so the
    queue delivers it again)."""


class ReplayReview:
    def __init__(
        self,
        records: ReplayRecords,
        documents: DocumentService,
        queue: MessageQueue,
        clock: Clock,
        retry_base_seconds: int,
        retry_limit: int,
        check_clearance: Callable[[Caller, ReplayRecord | None], None] = lambda caller, record: (
            None
        ),
    ) -> None:
        self._records, self._documents, self._queue, self._clock = records, documents, queue, clock
        self._retry_base, self._retry_limit = retry_base_seconds, retry_limit
        self._check_clearance = check_clearance  # a replay's plan shows what it could see

    def park(self, ref: SnapshotRef, index: int, error: EtagMismatch) -> ReplayRecord:
        """Queue the first retry, then record the patch as unresolved (in this order: a
        crash between them re-parks on redelivery; a duplicate retry is ignored)."""
        self._send_retry(ref, index, 1)
        entry = Parked(
            patch_index=index,
            state="retrying",
            reason=error.message,
            conflict=error.details.get("rebase"),
            latest_etag=error.details.get("latest_etag"),
            next_retry_at=self._at(self._delay(1)),
        )

        def park(record: ReplayRecord) -> ReplayRecord:
            if record.parked(index) is not None:
                return record
            return replace(record, unresolved=(*record.unresolved, entry))

        return self._records.update(ref, park)

    def retry(self, ref: SnapshotRef, index: int, attempt: int) -> ReplayRecord | None:
        """A delayed retry of a parked patch: rebase from its base once more.

        The message is sent before the record says so (a crash between the two must not
        leave a parked patch without a message), so a message may arrive first: then it
        raises, and the queue delivers it again later. A message for an attempt already
        made is a duplicate and is dropped."""
        record = self._records.load(ref)
        if record is None:
            return None
        entry = record.parked(index)
        if entry is None and not record.finished:
            raise RetryTooEarly(f"patch {index} of {ref.replay_id} is not parked yet")
        if entry is None or entry.state != "retrying" or attempt <= entry.attempts:
            return record  # resolved meanwhile, or a duplicate of an earlier message
        if attempt > entry.attempts + 1:
            raise RetryTooEarly(f"attempt {attempt - 1} of {ref.replay_id} is not recorded yet")
        patch = record.planned_patch(index)
        caller = replay_caller(ref, record.profile_id, record.clearance)
        try:
            response = self._documents.patch(caller, command(ref, record, patch, patch.base_etag))
        except EtagMismatch as error:
            return self._retry_later(ref, index, attempt, error)
        except MemnetError as error:
            if error.code.startswith("IDEMPOTENCY"):
                raise
            return self._records.update(ref, reject_parked(index, error))
        return self._records.update(ref, add_change(patch, response.body, retried=attempt))

    def _retry_later(
        self, ref: SnapshotRef, index: int, attempt: int, error: EtagMismatch
    ) -> ReplayRecord:
        review = attempt >= self._retry_limit
        if not review:
            self._send_retry(ref, index, attempt + 1)

        def update(entry: Parked) -> Parked | None:
            if entry.attempts >= attempt:
                return None
            return replace(
                entry,
                attempts=attempt,
                reason=error.message,
                conflict=error.details.get("rebase"),
                latest_etag=error.details.get("latest_etag"),
                state="review" if review else "retrying",
                next_retry_at=None if review else self._at(self._delay(attempt + 1)),
            )

        return self._records.update(ref, change_parked(index, update))

    def give_up(self, ref: SnapshotRef, index: int) -> ReplayRecord:
        """A retry message that failed every delivery: its patch waits for review."""

        def review(entry: Parked) -> Parked | None:
            if entry.state != "retrying":
                return None
            return replace(entry, state="review", next_retry_at=None)

        return self._records.update(ref, change_parked(index, review))

    def resolve(self, caller: Caller, ref: SnapshotRef, index: int, action: str) -> ReplayRecord:
        """Admin review of a parked patch: ``retry`` applies its ops to the latest
        version now (checked like any write: a failing test op or schema is 422 and
        the patch stays parked); ``discard`` drops it."""
        caller.require(ref.tenant_id, "admin")
        record = self._records.load(ref)
        if record is not None and record.profile_id:
            caller.require_profile(record.profile_id)
        self._check_clearance(caller, record)
        entry = None if record is None else record.parked(index)
        if record is None or entry is None or not entry.waiting():
            raise NotFound("No unresolved patch with this index.", code="UNRESOLVED_NOT_FOUND")
        if action == "discard":
            return self._records.update(
                ref, resolve_parked(index, "discarded", discarded_by=caller.caller_id)
            )
        patch = record.planned_patch(index)
        target = DocumentRef(ref.tenant_id, ref.user_id, patch.target_namespace, patch.target_path)
        current = self._documents.load(target)
        now = command(ref, record, patch, current.etag if current else None, rebase=False)
        replayer = replay_caller(ref, record.profile_id, record.clearance)
        response = self._documents.patch(replayer, now)
        return self._records.update(
            ref, add_change(patch, response.body, resolved_by=caller.caller_id)
        )

    def unresolved(
        self, caller: Caller, tenant_id: str, user_id: str, limit: int
    ) -> list[ReplayRecord]:
        """The user's replays holding patches that wait for a retry or a review."""
        caller.require(tenant_id, "admin")
        found = []
        for record in self._records.list(tenant_id, user_id):
            if record.status == "unresolved" and self._may_see(caller, record):
                found.append(record)
                if len(found) >= limit:
                    break
        return found

    def _may_see(self, caller: Caller, record: ReplayRecord) -> bool:
        try:
            self._check_clearance(caller, record)
        except Forbidden:
            return False
        return True

    def _send_retry(self, ref: SnapshotRef, index: int, attempt: int) -> None:
        body = {"kind": "retry", **ref.as_json(), "patch_index": index, "attempt": attempt}
        self._queue.send(REPLAY_QUEUE, json.dumps(body), delay_seconds=self._delay(attempt))

    def _delay(self, attempt: int) -> int:
        return int(min(self._retry_base * 2 ** (attempt - 1), MAX_RETRY_DELAY_SECONDS))

    def _at(self, seconds: int) -> str:
        return format_millis(self._clock.now() + timedelta(seconds=seconds))
