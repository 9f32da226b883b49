"""Idempotency keys (spec 10.2; docs/decisions.md "Idempotency").

Scope is (tenant, user, caller, key). The first request claims the key with a create-only
*pending* record that already names the change id it will write; on success the record
becomes *complete* and holds the response. A repeat with the same fingerprint gets the
stored response (checked before the ETag); a different fingerprint gets 409. A pending
record is either still running (409 ``IDEMPOTENCY_KEY_IN_PROGRESS`` with Retry-After),
or its writer died: if its change committed the response is rebuilt from the document,
otherwise after the lease the next request takes the key over. A failed request
releases the key so a corrected retry can reuse it. Records expire after a TTL.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import secrets
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from datetime import datetime, timedelta

from memnet.domain.audit_records import new_change_id
from memnet.domain.envelope import Json
from memnet.domain.errors import Conflict
from memnet.domain.layout import idempotency_name
from memnet.domain.timestamps import format_timestamp, parse_timestamp
from memnet.ports import BlobNotFound, BlobStore, Clock, Condition, PreconditionFailed
from memnet.services.records import dump, retrying

MAX_KEY_CHARS = 255


def key_hash(caller_id: str, key: str) -> str:
    """The stored name of a caller's key: keys are scoped to the caller as well as the
    tenant and user, so another caller who guesses a key first cannot claim it."""
    return hashlib.sha256(json.dumps([caller_id, key]).encode()).hexdigest()


@dataclass(frozen=True)
class Response:
    """What a write answers, and what its claim keeps for a repeat of the request:
    whether it created its resource, the body, and (a repeat's) that it was replayed."""

    created: bool
    body: Json
    replayed: bool = False

    def as_json(self) -> Json:
        found: Json = {"created": self.created, "body": self.body}
        return {**found, "replayed": True} if self.replayed else found

    @property
    def status(self) -> int:
        return 201 if self.created else 200

    @classmethod
    def from_json(cls, stored: Json) -> Response:
        # a response stored before services said "created" carries its status instead
        created = stored["created"] if "created" in stored else stored.get("status") == 201
        return cls(bool(created), stored["body"], bool(stored.get("replayed")))


@dataclass(frozen=True)
class Claim:
    """The stored record of one key: *pending* while its request runs, then *complete*
    with the response. ``claim`` is unique to the attempt that wrote it, so an attempt
    that finds the record after a lost response can recognise it as its own."""

    fingerprint: str
    state: str  # "pending" or "complete"
    claim: str
    change_id: str
    started_at: str
    expires_at: str
    response: Response | None = None  # when complete

    def as_json(self) -> Json:
        found = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.response is None:
            del found["response"]
        else:
            found["response"] = self.response.as_json()
        return found

    @classmethod
    def from_json(cls, stored: Json) -> Claim:
        known: Json = {f.name: stored.get(f.name) for f in fields(cls)}
        answer = known["response"]
        return cls(**{**known, "response": None if answer is None else Response.from_json(answer)})


@dataclass(frozen=True)
class Ticket:
    """The right to execute one request: the claimed record's name, ETag and claim."""

    name: str
    etag: str
    claimed: Claim

    @property
    def change_id(self) -> str:
        return self.claimed.change_id


@dataclass(frozen=True)
class Replay:
    response: Response


class IdempotencyStore:
    def __init__(self, blobs: BlobStore, clock: Clock, ttl: timedelta, lease: timedelta):
        self._blobs, self._clock, self._ttl, self._lease = blobs, clock, ttl, lease

    def begin(
        self,
        tenant_id: str,
        user_id: str,
        caller_id: str,
        key: str,
        fingerprint: str,
        committed: Callable[[str], Response | None],
    ) -> Ticket | Replay:
        """Claim ``key`` for this request, or return the response it already produced.

        ``committed(change_id)`` returns the response of a change that reached its
        document, or None; it settles pending records whose writer died."""
        name = idempotency_name(tenant_id, user_id, key_hash(caller_id, key))
        try:  # a lost race: the record changed or vanished under us; look again
            return retrying(
                lambda: self._claim_or_inspect(name, fingerprint, committed), attempts=4
            )
        except PreconditionFailed:
            raise Conflict(
                "Idempotency key is contended; retry.",
                code="IDEMPOTENCY_KEY_IN_PROGRESS",
                retry_after=1,
            ) from None

    @property
    def lease(self) -> timedelta:
        return self._lease

    def complete(self, ticket: Ticket, response: Response) -> None:
        """Store the response; if another request took the key over, leave its record."""
        done = replace(ticket.claimed, state="complete", response=response)
        with contextlib.suppress(PreconditionFailed, BlobNotFound):
            self._blobs.write(ticket.name, dump(done.as_json()), Condition.match(ticket.etag))

    def release(self, ticket: Ticket) -> None:
        """Forget the claim after a failed request (nothing was written)."""
        with contextlib.suppress(PreconditionFailed, BlobNotFound):
            self._blobs.delete(ticket.name, Condition.match(ticket.etag))

    def _claim_or_inspect(
        self, name: str, fingerprint: str, committed: Callable[[str], Response | None]
    ) -> Ticket | Replay:
        mine = self._new_claim(fingerprint)
        try:
            return self._claim(name, mine, Condition.create_only())
        except PreconditionFailed:
            pass
        try:
            blob = self._blobs.read(name)
        except BlobNotFound:
            raise PreconditionFailed(name) from None
        found = Claim.from_json(json.loads(blob.data))
        if found.claim == mine.claim:  # our own create, its response was lost
            return Ticket(name, blob.etag, found)
        return self._inspect(Ticket(name, blob.etag, found), fingerprint, committed)

    def _inspect(
        self, found: Ticket, fingerprint: str, committed: Callable[[str], Response | None]
    ) -> Ticket | Replay:
        """Another request's claim (``found``): expired, reused, done, or pending."""
        claimed = found.claimed
        if self._now() >= _time(claimed.expires_at):
            return self._take_over(found, fingerprint)
        if claimed.fingerprint != fingerprint:
            raise Conflict(
                "Idempotency-Key was already used with a different request.",
                code="IDEMPOTENCY_KEY_REUSED",
            )
        if claimed.state == "complete" and claimed.response is not None:
            return Replay(claimed.response)
        return self._settle_pending(found, fingerprint, committed)

    def _settle_pending(
        self, found: Ticket, fingerprint: str, committed: Callable[[str], Response | None]
    ) -> Ticket | Replay:
        response = committed(found.change_id)
        if response is not None:
            self.complete(found, response)
            return Replay(response)
        waited = self._now() - _time(found.claimed.started_at)
        if waited < self._lease:
            retry = max(1, math.ceil((self._lease - waited).total_seconds()))
            raise Conflict(
                "A request with this Idempotency-Key is still in progress.",
                code="IDEMPOTENCY_KEY_IN_PROGRESS",
                retry_after=retry,
            )
        return self._take_over(found, fingerprint)

    def _take_over(self, found: Ticket, fingerprint: str) -> Ticket:
        mine = self._new_claim(fingerprint)
        try:
            return self._claim(found.name, mine, Condition.match(found.etag))
        except BlobNotFound:
            raise PreconditionFailed(found.name) from None

    def _new_claim(self, fingerprint: str) -> Claim:
        now = self._now()
        return Claim(
            fingerprint=fingerprint,
            state="pending",
            claim=secrets.token_hex(8),
            change_id=new_change_id(now),
            started_at=format_timestamp(now),
            expires_at=format_timestamp(now + self._ttl),
        )

    def _claim(self, name: str, claimed: Claim, condition: Condition) -> Ticket:
        etag = self._blobs.write(name, dump(claimed.as_json()), condition)
        return Ticket(name, etag, claimed)

    def _now(self) -> datetime:
        return self._clock.now()


def _time(text: str) -> datetime:
    return parse_timestamp(text, "idempotency record time")
