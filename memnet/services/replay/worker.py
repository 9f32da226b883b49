"""The replay worker (spec 13, 14): turns a stored snapshot into an event digest and
evidence-linked patches applied through the governed write path.

One run, each step recorded in the replay record (:mod:`memnet.services.replay.records`)
before the next, so a crash anywhere followed by redelivery ends the same way:

1. claim: state ``running``, attempts + 1 (a finished replay's message is a no-op);
2. plan, once: open the snapshot, load the documents the profile lets it write, call
   the :class:`~memnet.ports.Extractor`, check its output
   (:func:`memnet.domain.replay_contract.check_output`) and store the accepted digests
   and spec 9.3 patch records with what was rejected and why; a redelivered message
   applies this stored plan, never a second extraction;
3. each digest becomes an event (idempotent: fixed event id and key);
4. each patch goes through :meth:`DocumentService.patch` as the replay's own caller with
   reason ``replay_update``, its confidence and evidence (so confidence gates redirect
   it to the pending section exactly as a live write), its idempotency key, If-Match
   its base ETag and ``rebase`` (a stale base is rebased once when the ops commute);
   on 412 it is parked as unresolved and retried from the queue with exponential
   backoff, up to a limit, then left for review (admin retry or discard);
5. finish: the status follows from the record.

A transient failure (key vault, extractor timeout, storage) raises, so the queue
redelivers the message; after ``maxDequeueCount`` attempts it goes to the poison queue
and never blocks the others. A permanent one (wrong key, extractor output that is not
structured) ends the replay as ``failed`` with the reason, having written nothing.
"""

from __future__ import annotations

import json
import logging
import math
import secrets
from dataclasses import replace
from functools import partial
from typing import Any

from memnet.domain import sensitivity_views as views
from memnet.domain.callers import Caller
from memnet.domain.envelope import Json
from memnet.domain.errors import BadRequest, Conflict, EtagMismatch, MemnetError
from memnet.domain.layout import DocumentRef, SnapshotRef
from memnet.domain.profiles import Profile
from memnet.domain.replay_contract import (
    Digest,
    ExtractionRequest,
    Rejection,
    ReplayPlan,
    TargetDocument,
    check_output,
)
from memnet.domain.replay_guard import Similar, clamp_transcript, review
from memnet.domain.replay_plan import PatchRecord, StoredPlan
from memnet.domain.timestamps import parse_timestamp
from memnet.domain.transcript import Transcript
from memnet.ports import (
    BlobNotFound,
    Clock,
    Embedder,
    EmbedderError,
    Extractor,
    ExtractorError,
    MessageQueue,
)
from memnet.services import telemetry
from memnet.services.documents.service import DocumentService
from memnet.services.events.classes import replay_class
from memnet.services.events.service import EventService
from memnet.services.profiles.registry import ProfileRegistry
from memnet.services.replay.records import (
    TERMINAL,
    ReplayRecord,
    ReplayRecords,
    add_change,
    add_rejection,
    claim,
)
from memnet.services.replay.review import ReplayReview
from memnet.services.replay.sealing import SealedBlobError
from memnet.services.replay.snapshots import SnapshotService, snapshot_ref_of
from memnet.services.replay.writes import REPLAY_CALLER, command, fingerprint, replay_caller

log = logging.getLogger("memnet.services.replay.worker")


class ReplayFailed(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


class ReplayService:
    def __init__(
        self,
        *,
        snapshots: SnapshotService,
        records: ReplayRecords,
        registry: ProfileRegistry,
        documents: DocumentService,
        events: EventService,
        extractor: Extractor,
        queue: MessageQueue,
        clock: Clock,
        retry_base_seconds: int = 60,
        retry_limit: int = 5,
        embedder: Embedder | None = None,
    ) -> None:
        self._snapshots, self._records, self._registry = snapshots, records, registry
        self._similar = None if embedder is None else _similarity(embedder)
        self._documents, self._events, self._extractor = documents, events, extractor
        self._clock = clock
        self.review = ReplayReview(
            records,
            documents,
            queue,
            clock,
            retry_base_seconds,
            retry_limit,
            snapshots.check_clearance,
        )

    @property
    def extractor(self) -> Extractor:
        return self._extractor

    @property
    def records(self) -> ReplayRecords:
        return self._records

    @property
    def documents(self) -> DocumentService:
        return self._documents

    # -- messages ------------------------------------------------------------------

    def handle_message(self, body: str) -> ReplayRecord | None:
        """One replay-queue message: ``{"kind": "replay" | "retry", tenant_id, user_id,
        conversation_id, snapshot_id[, patch_index, attempt]}``. A malformed message
        raises (after the last attempt it lands in the poison queue)."""
        message = json.loads(body)
        ids = [str(message[k]) for k in ("tenant_id", "user_id", "conversation_id", "snapshot_id")]
        ref = snapshot_ref_of(SnapshotRef(*ids).blob_name)
        if ref is None:
            raise ValueError("replay message names no valid snapshot")
        if message.get("kind") == "retry":
            return self.review.retry(ref, int(message["patch_index"]), int(message["attempt"]))
        stored = self._records.load(ref)
        if stored is None and not self._snapshots.exists(ref):
            # Forgotten or expired before its message arrived: a record now would recreate
            # data under the user's prefix behind a forget or a sweep.
            log.info("replay message for a snapshot that is gone: %s", ref.replay_id)
            return None
        if stored is not None and stored.status not in TERMINAL:
            age = self._clock.now() - parse_timestamp(stored.created_at)
            telemetry.replay_taken(age.total_seconds())
        record = self.run(ref)
        if record.finished and not (stored and stored.status in TERMINAL):
            telemetry.replay_finished(record.status)
        return record

    def gave_up(self, body: str) -> ReplayRecord | None:
        """A message the queue moved to poison after its last delivery failed: the
        replay it names is recorded as ``failed`` (``REPLAY_GAVE_UP``), so its status
        does not say ``running`` for ever; an admin may re-drive it. A retry message
        leaves its parked patch for review instead."""
        try:
            message = json.loads(body)
            ids = [
                str(message[k]) for k in ("tenant_id", "user_id", "conversation_id", "snapshot_id")
            ]
        except (ValueError, KeyError, TypeError):
            log.warning("poison replay message is not one: %.200r", body)
            return None
        ref = snapshot_ref_of(SnapshotRef(*ids).blob_name)
        if ref is None or self._records.load(ref) is None:
            log.warning("poison replay message names no replay: %.200r", body)
            return None
        log.warning("replay %s gave up: %.200r", ref.replay_id, body)
        if message.get("kind") == "retry":
            return self.review.give_up(ref, int(message.get("patch_index", -1)))

        def give_up(record: ReplayRecord) -> ReplayRecord:
            if record.finished:
                return record
            reason = "its queue message failed every delivery; see the worker's log"
            error = {"code": "REPLAY_GAVE_UP", "message": reason}
            return replace(record, error=error, finished=True)

        return self._records.update(ref, give_up)

    def redrive(self, caller: Caller, ref: SnapshotRef) -> ReplayRecord:
        """Admin: queue a ``failed`` replay again (after fixing a key, a profile or an
        extractor). A stored plan is kept, so what was written is not written again."""
        caller.require(ref.tenant_id, "admin")
        record = self._records.load(ref)
        if record is not None and record.profile_id:
            caller.require_profile(record.profile_id)
        self._snapshots.check_clearance(caller, record)
        if record is None or record.status != "failed":
            raise Conflict("Only a failed replay can be re-driven.", code="REPLAY_NOT_FAILED")
        again = partial(replace, error=None, finished=False, status="queued", enqueued=False)
        self._records.update(ref, again)
        return self._snapshots.start(ref, "redrive")

    # -- one run -------------------------------------------------------------------

    def run(self, ref: SnapshotRef) -> ReplayRecord:
        self._snapshots.check_tombstone(ref)  # a forget runs: nothing may be written
        record = self._records.load(ref)
        if record is None:  # a message with no record (written by hand, or a lost one)
            self._records.create(ref, source="queue")
        elif record.status in TERMINAL:
            return record
        record = self._records.update(ref, claim)
        if record.output is None:
            record = self._plan(ref)
        if record.output is None:  # failed: another worker's plan would have won
            return record
        output = record.output
        caller = replay_caller(ref, record.profile_id, record.clearance)
        for index, digest in enumerate(output.digests):
            self._write_digest(ref, caller, record, index, digest)
        for patch in output.patches:
            if not record.settled(patch.patch_index):
                record = self._apply(ref, caller, record, patch)
        return self._records.update(ref, partial(replace, finished=True))

    def extraction_request(self, ref: SnapshotRef) -> ExtractionRequest:
        """What the extractor is given: the transcript, its profile, and the current
        documents it may change (:class:`~memnet.ports.BlobNotFound` or
        :class:`~memnet.services.replay.sealing.SealedBlobError` when the snapshot cannot be
        read; :class:`ReplayFailed` when it names no usable profile)."""
        transcript = self._snapshots.open(ref)
        profile = self._profile(transcript)
        if profile is None:
            raise ReplayFailed("PROFILE_REQUIRED", "the snapshot names no usable profile")
        record = self._records.load(ref)
        clearance = None if record is None else record.clearance
        if profile.guard is not None:
            uploaded = self._clock.now() if record is None else parse_timestamp(record.created_at)
            transcript = clamp_transcript(transcript, uploaded, profile.guard.max_skew)
        caller = replay_caller(ref, profile.profile_id, clearance)
        targets = self._targets(ref, caller, profile, transcript)
        now = self._records.now()
        return ExtractionRequest(transcript, profile, targets, ref.uri, now, ref.conversation_id)

    def checked(self, raw: Any, request: ExtractionRequest) -> ReplayPlan:
        """What of an extractor's output ``raw`` may be written, and how: the replay
        contract, then the profile's poisoning guard."""
        return review(check_output(raw, request), request, self._similar)

    def _plan(self, ref: SnapshotRef) -> ReplayRecord:
        try:
            request = self._request(ref)
            raw = self._extract(request)
        except ReplayFailed as failed:
            return self._fail(ref, failed.code, failed.message)
        plan = self.checked(raw, request)
        rejected = tuple(plan.rejected)
        if any(r.part == "output" for r in plan.rejected):
            return self._fail(ref, "OUTPUT_NOT_STRUCTURED", plan.rejected[0].reason, rejected)
        output = _stored_plan(ref, request, plan)
        extractor = {"name": self._extractor.name, "version": self._extractor.version}

        def store(record: ReplayRecord) -> ReplayRecord:
            if record.output is not None:  # a concurrent worker may have planned first
                return record
            profile_id = request.profile.profile_id
            return replace(
                record,
                output=output,
                rejected=rejected,
                extractor=extractor,
                profile_id=profile_id,
            )

        return self._records.update(ref, store)

    def _request(self, ref: SnapshotRef) -> ExtractionRequest:
        """:meth:`extraction_request`, a permanent failure to build it raised as
        :class:`ReplayFailed` (a transient one as it is: the message is delivered again)."""
        try:
            return self.extraction_request(ref)
        except BlobNotFound:
            raise ReplayFailed("SNAPSHOT_NOT_FOUND", "the snapshot blob does not exist") from None
        except SealedBlobError as error:
            if error.transient:
                raise
            raise ReplayFailed(error.code, str(error)) from error
        except (BadRequest, ValueError) as error:  # sealed fine, but not a transcript
            message = error.message if isinstance(error, BadRequest) else "not JSON"
            raise ReplayFailed("SNAPSHOT_INVALID", message) from error

    def _extract(self, request: ExtractionRequest) -> Any:
        try:
            return self._extractor.extract(request)
        except ExtractorError as error:
            if error.transient:
                raise
            raise ReplayFailed("EXTRACTOR_FAILED", str(error)) from error

    def _profile(self, transcript: Transcript) -> Profile | None:
        if transcript.profile_id is not None:
            return self._registry.get(transcript.profile_id)
        known = self._registry.profile_ids()
        return self._registry.get(known[0]) if len(known) == 1 else None

    def _targets(
        self, ref: SnapshotRef, caller: Caller, profile: Profile, transcript: Transcript
    ) -> tuple[TargetDocument, ...]:
        """The current documents of every writable binding of the user the transcript
        can address (a templated path needs the transcript's project hint); never a
        tenant's shared document; each as the replay's ``caller`` sees it (its ops address
        that view, as any caller's do)."""
        routing = profile.context.routing
        variables = (
            {routing.project_variable: transcript.project_hint}
            if routing is not None and transcript.project_hint is not None
            else {}
        )
        found = []
        for binding in profile.bindings:
            path = binding.path_for(variables)
            if (
                not binding.writable
                or binding.shared  # a user's conversation never rewrites the tenant's
                or path is None
                or binding.binding_id not in profile.writable_paths
            ):
                continue
            stored = self._documents.load(
                DocumentRef(ref.tenant_id, ref.user_id, binding.namespace, path)
            )
            content = stored.document["content"] if stored else dict(binding.initial_content)
            content = views.content_seen(content, caller, views.rules_for(profile, binding))
            found.append(
                TargetDocument(
                    binding.binding_id,
                    binding.namespace,
                    path,
                    stored.etag if stored else None,
                    content,
                )
            )
        return tuple(found)

    def _fail(
        self, ref: SnapshotRef, code: str, message: str, rejected: tuple[Rejection, ...] = ()
    ) -> ReplayRecord:
        log.warning("replay %s failed: %s", ref.replay_id, code)

        def fail(record: ReplayRecord) -> ReplayRecord:
            if record.output is not None:
                return record  # another worker planned (and may have written): its plan stands
            error = {"code": code, "message": message[:500]}
            kept = rejected or record.rejected
            return replace(record, error=error, rejected=kept, finished=True)

        return self._records.update(ref, fail)

    # -- writes ----------------------------------------------------------------------

    def _write_digest(
        self,
        ref: SnapshotRef,
        caller: Caller,
        record: ReplayRecord,
        index: int,
        digest: Digest,
    ) -> None:
        assert record.output is not None
        event_id = f"{record.output.event_prefix}_{index}"
        if event_id in record.events:
            return
        key = f"replay-{ref.replay_id}-digest-{index}"
        try:
            body = self._digest_body(ref, caller, record, event_id, digest)
            self._events.write(caller, ref.tenant_id, ref.user_id, body, key, fingerprint(body))
        except MemnetError as error:
            if error.code.startswith("IDEMPOTENCY"):
                raise
            self._records.update(ref, add_rejection("digest", index, error))
            return
        self._records.update(
            ref, lambda r: r if event_id in r.events else replace(r, events=(*r.events, event_id))
        )

    def _digest_body(
        self, ref: SnapshotRef, caller: Caller, record: ReplayRecord, event_id: str, digest: Digest
    ) -> Json:
        """The event of one digest, of the replay's class: its uploader's clearance in its
        profile (:func:`~memnet.services.events.classes.replay_class`; a profile gone
        since the plan: 404, the digest rejected)."""
        assert record.output is not None
        profile = self._registry.for_caller(caller, record.profile_id)
        return {
            "event_id": event_id,
            "service_id": record.output.service_id,
            "timestamp": record.output.timestamp,
            "source_type": "replay",
            "digest": digest.digest,
            "keywords": list(digest.keywords),
            "project_ids": list(digest.project_ids),
            "snapshot_uri": ref.uri,
            "evidence": {"message_ids": list(digest.message_ids)},
            "sensitivity": replay_class(profile, record.clearance),
        }

    def _apply(
        self, ref: SnapshotRef, caller: Caller, record: ReplayRecord, patch: PatchRecord
    ) -> ReplayRecord:
        index = patch.patch_index
        try:
            response = self._documents.patch(caller, command(ref, record, patch, patch.base_etag))
        except EtagMismatch as error:
            return self.review.park(ref, index, error)
        except MemnetError as error:
            if error.code.startswith("IDEMPOTENCY"):
                raise  # another worker holds this patch right now: retry the message
            return self._records.update(ref, add_rejection("patch", index, error))
        return self._records.update(ref, add_change(patch, response.body))


def _similarity(embedder: Embedder) -> Similar:
    """Cosine similarity of two texts by ``embedder``: the guard's semantic support
    (docs/security.md). An embedder that fails counts as no similarity, so the value is
    held unless its words support it (a replay never waits on a failing model)."""

    def similar(claim: str, cited: str) -> float:
        try:
            first, second = embedder.embed([claim, cited])
        except EmbedderError as error:
            log.warning("guard similarity without the embedder: %s", error)
            return 0.0
        norms = math.hypot(*first) * math.hypot(*second)
        return sum(a * b for a, b in zip(first, second, strict=True)) / norms if norms else 0.0

    return similar


def _stored_plan(ref: SnapshotRef, request: ExtractionRequest, plan: ReplayPlan) -> StoredPlan:
    etags = {(t.binding_id, t.path): t.etag for t in request.targets}
    transcript = request.transcript
    return StoredPlan(
        service_id=transcript.service_id or REPLAY_CALLER,
        timestamp=transcript.messages[-1].timestamp,
        event_prefix=f"evt_{secrets.token_hex(12)}",  # unguessable: nobody takes them first
        digests=tuple(plan.digests),
        patches=tuple(
            PatchRecord.of(p, ref.replay_id, request, etags[(p.binding_id, p.path)])
            for p in plan.patches
        ),
    )
