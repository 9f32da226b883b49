"""Forget one conversation (issue 11, beyond spec 17): its snapshots, replay records and
events (with their index entries) are deleted, and what was learned from it is retracted
from every document of the user (:mod:`memnet.domain.retraction`).

A queued job like forget-user (same queue, ``kind`` in the message; state under the
tenant's governance prefix, not a tombstone: the user keeps writing). Phases in order:
``snapshots``, ``replays``, ``events`` (each event blob is read once: deleted when its
``snapshot_uri`` or evidence points at the conversation; a cursor remembers how far the
scan got), ``documents`` (each changed document is one audited write through
:meth:`~memnet.services.documents.service.DocumentService.patch` as ``memnet-forget``, reason
``forget_conversation``, If-Match and an idempotency key derived from the job and the
document's change id; the write is recorded in the state first, so a rerun re-issues
the identical request, which the key answers), ``exports`` (every archive of the user
made so far holds the conversation: all are deleted), then the receipt. Held kinds are kept.
Earlier audit records still hold what was learned until retention or a forget of the
user removes them (docs/forgetting.md).
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import replace
from itertools import pairwise
from typing import Any

from memnet.domain.callers import Caller
from memnet.domain.errors import Conflict, NotFound
from memnet.domain.layout import export_prefix, forget_conversation_job_name, user_prefix
from memnet.domain.retraction import Matcher, points_at
from memnet.ports import BlobNotFound, BlobStore, Clock, MessageQueue, SearchIndex
from memnet.services.documents.expiry import DocumentExpiry, shortest_ttl
from memnet.services.documents.service import DocumentService
from memnet.services.forget.job import ConversationPhase, ForgetJob, JobMessage
from memnet.services.forget.ledger import FORGET_CALLER, Job, Superseded, new_token
from memnet.services.forget.receipts import accepted, public_view, require_any
from memnet.services.forget.retraction import DocumentBusy, DocumentRetraction
from memnet.services.forget.user import RETRY_AFTER_POISON, ForgetService
from memnet.services.governance.holds import LegalHolds
from memnet.services.profiles.registry import ProfileRegistry

PHASES: tuple[ConversationPhase, ...] = (
    "snapshots",
    "replays",
    "events",
    "documents",
    "exports",  # copies of all the above (docs/export.md): an archive made before now
    "finishing",
)
NEXT_PHASE: dict[str, ConversationPhase] = dict(pairwise(PHASES))
TOMBSTONED = ("FORGET_IN_PROGRESS", "USER_RECENTLY_FORGOTTEN")
BUSY_RETRY_SECONDS = 30


class ForgetConversation:
    def __init__(
        self,
        *,
        forget: ForgetService,
        documents: DocumentService,
        registry: ProfileRegistry,
        blobs: BlobStore,
        index: SearchIndex,
        queue: MessageQueue,
        holds: LegalHolds,
        clock: Clock,
    ) -> None:
        self._forget, self._documents, self._registry = forget, documents, registry
        self._blobs, self._index, self._queue = blobs, index, queue
        self._holds, self._clock = holds, clock
        self._jobs, self._ledger = forget.jobs, forget.ledger
        expiry = DocumentExpiry(blobs, clock, shortest_ttl(registry))
        self._retraction = DocumentRetraction(documents, registry, blobs, forget.jobs, expiry)

    def request(self, caller: Caller, t: str, u: str, c: str) -> dict[str, Any]:
        caller.require(t, "forget")
        name = forget_conversation_job_name(t, u, c)

        def running(job: Job) -> dict[str, Any]:
            if self._forget.stalled(job.state):
                self._forget.send(job.state)
            return accepted(job.state)

        def started(job: Job) -> dict[str, Any]:
            self._holds.log(
                t,
                "forget_conversation_requested",
                caller.caller_id,
                user_id=u,
                conversation_id=c,
                forget_id=job.state.forget_id,
            )
            self._forget.send(job.state)
            return accepted(job.state)

        return self._forget.start(name, lambda: self._new_job(caller, t, u, c), running, started)

    def _new_job(self, caller: Caller, t: str, u: str, c: str) -> ForgetJob:
        token = secrets.token_hex(12)
        return ForgetJob(
            kind="forget_conversation",
            forget_id=f"fgc_{token}",
            receipt_id=f"rcpt_{token}",
            tenant_id=t,
            user_id=u,
            conversation_id=c,
            requested_by=caller.caller_id,
            started_at=self._jobs.now(),
            status="running",
            phase=PHASES[0],
            run=new_token(),
        )

    def status(self, caller: Caller, t: str, u: str, c: str) -> dict[str, Any]:
        require_any(caller, t, ("forget", "admin"))
        job = self._jobs.load(forget_conversation_job_name(t, u, c))
        if job is None:
            raise NotFound("No forget job for this conversation.", code="FORGET_NOT_FOUND")
        return public_view(job.state)

    # -- the worker -----------------------------------------------------------------

    def run(self, message: dict[str, Any]) -> ForgetJob | None:
        sent = JobMessage.from_json(message)
        job = self._jobs.load(sent.job_name)
        if job is None or job.state.status != "running" or not sent.runs(job.state):
            return None
        deadline = time.monotonic() + self._forget.settings.job_max_seconds
        try:
            return self._work(job, deadline).state
        except Superseded:  # another invocation saved first; it carries on
            return None
        except DocumentBusy:  # live writers keep changing one document: try it later
            job = self._jobs.load(job.name) or job
            return self._again(job, BUSY_RETRY_SECONDS).state
        except Conflict as refused:
            if refused.code not in TOMBSTONED:
                raise  # (an idempotency key still in progress, say): the queue retries
            job = self._jobs.load(job.name) or job  # the user's forget removes it all
            cancelled = replace(job.state, status="cancelled", error={"code": refused.code})
            return self._jobs.save(job, cancelled).state

    def gave_up(self, message: dict[str, Any]) -> None:
        """The message failed every delivery: queue the job again in five minutes."""
        job = self._jobs.load(JobMessage.from_json(message).job_name)
        if job is not None and job.state.status == "running":
            job = self._jobs.save(job, replace(job.state, run=new_token()))
            self._forget.send(job.state, RETRY_AFTER_POISON)

    def _work(self, job: Job, deadline: float) -> Job:
        held = self._holds.held(job.state.tenant_id, job.state.user_id)
        kept = {kind: h.as_json() for kind, h in sorted(held.items())}
        job = self._ledger.finish_pending(replace(job, state=replace(job.state, kept=kept)))
        while (phase := job.state.phase) != "finishing":
            if phase not in held:
                job, finished = self._phase(job, phase, deadline)
                if not finished:
                    return self._again(job)
            job = self._jobs.save(job, replace(job.state, phase=NEXT_PHASE[phase]))
        return self._finish(job)

    def _phase(self, job: Job, phase: str, deadline: float) -> tuple[Job, bool]:
        if phase == "documents":
            return self._retraction.run(job, deadline)
        if phase == "events":
            return self._events(job, deadline)
        while batch := self._batch(job.state, phase):
            job = self._ledger.delete_batch(job, phase, batch)
            if time.monotonic() >= deadline:
                return job, False
        return job, True

    def _batch(self, state: ForgetJob, phase: str) -> list[str]:
        """The next names of the conversation's snapshots or replay records, or of the
        user's exports (deleted names are gone, so listing again from the start resumes)."""
        prefix = user_prefix(state.tenant_id, state.user_id)
        listed = f"{prefix}{phase}/{state.conversation_id}/"
        if phase == "exports":  # the user's whole archives: each may hold the conversation
            listed = export_prefix(state.tenant_id, state.user_id)
        names = self._blobs.list_names(listed)
        return [n for _, n in zip(range(self._forget.settings.page_size), names, strict=False)]

    def _events(self, job: Job, deadline: float) -> tuple[Job, bool]:
        """Scan the user's events a page at a time from the saved continuation; delete
        those that name the conversation. The place is saved with each page (with the
        batch's record when the page found some), so a rerun resumes after it, and a
        page that found none still moves the scan on: the phase ends only when the
        listing does."""
        state = job.state
        prefix = user_prefix(state.tenant_id, state.user_id) + "events/"
        matches = points_at(state.tenant_id, state.user_id, state.conversation_id)
        while True:
            after = job.state.events_after or None
            page = self._blobs.list_page(prefix, after, self._forget.settings.page_size)
            found = [i.name for i in page.items if self._names_conversation(i.name, matches)]
            job = replace(job, state=replace(job.state, events_after=page.continuation or ""))
            ledger, jobs = self._ledger, self._jobs
            job = ledger.delete_batch(job, "events", found) if found else jobs.save(job)
            if page.continuation is None:
                return job, True
            if time.monotonic() >= deadline:
                return job, False

    def _names_conversation(self, name: str, matches: Matcher) -> bool:
        """Whether the event names the conversation: its ``snapshot_uri``, or any
        evidence object within its evidence (a compaction digest lists the evidence of
        the items it holds under ``sources``)."""
        try:
            event = json.loads(self._blobs.read(name).data)
        except (BlobNotFound, ValueError):
            return False
        if event.get("snapshot_uri") and matches({"snapshot_uri": event["snapshot_uri"]}):
            return True
        stack: list[Any] = [event.get("evidence")]
        while stack:
            node = stack.pop()
            if isinstance(node, dict):
                if matches(node):
                    return True
                stack.extend(node.values())
            elif isinstance(node, list):
                stack.extend(node)
        return False

    def _finish(self, job: Job) -> Job:
        state = replace(job.state, completed_at=job.state.completed_at or self._jobs.now())
        self._forget.write_receipt(state)
        self._holds.log(
            state.tenant_id,
            "forget_conversation_completed",
            FORGET_CALLER,
            user_id=state.user_id,
            forget_id=state.forget_id,
            receipt_id=state.receipt_id,
        )
        return self._jobs.save(job, replace(state, status="done"))

    def _again(self, job: Job, delay: int = 0) -> Job:
        """Hand the job to a new message, sent before its token is saved (see
        :meth:`memnet.services.forget.user.ForgetService._again`)."""
        state = replace(job.state, run=new_token())
        self._forget.send(state, delay)
        return self._jobs.save(job, state)
