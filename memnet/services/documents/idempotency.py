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
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from memnet.domain.audit_records import new_change_id
from memnet.domain.errors import Conflict
from memnet.domain.layout import idempotency_name
from memnet.domain.timestamps import format_timestamp, parse_timestamp
from memnet.ports import BlobNotFound, BlobStore, Clock, Condition, PreconditionFailed
from memnet.services.records import dump, retrying

Response = dict[str, Any]
MAX_KEY_CHARS = 255


def key_hash(caller_id: str, key: str) -> str:
    """The stored name of a caller's key: keys are scoped to the caller as well as the
    tenant and user, so another caller who guesses a key first cannot claim it."""
    return hashlib.sha256(json.dumps([caller_id, key]).encode()).hexdigest()


@dataclass(frozen=True)
class Ticket:
    """The right to execute one request: the claimed record's name, ETag and change id."""

    name: str
    etag: str
    change_id: str
    record: dict[str, Any]


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
        record = {**ticket.record, "state": "complete", "response": response}
        with contextlib.suppress(PreconditionFailed, BlobNotFound):
            self._blobs.write(ticket.name, dump(record), Condition.match(ticket.etag))

    def release(self, ticket: Ticket) -> None:
        """Forget the claim after a failed request (nothing was written)."""
        with contextlib.suppress(PreconditionFailed, BlobNotFound):
            self._blobs.delete(ticket.name, Condition.match(ticket.etag))

    def _claim_or_inspect(
        self, name: str, fingerprint: str, committed: Callable[[str], Response | None]
    ) -> Ticket | Replay:
        record = self._new_record(fingerprint)
        try:
            return self._claim(name, record, Condition.create_only())
        except PreconditionFailed:
            pass
        try:
            blob = self._blobs.read(name)
        except BlobNotFound:
            raise PreconditionFailed(name) from None
        found = json.loads(blob.data)
        if found.get("claim") == record["claim"]:  # our own create, its response was lost
            return Ticket(name, blob.etag, found["change_id"], found)
        return self._inspect(name, blob.etag, found, fingerprint, committed)

    def _inspect(
        self,
        name: str,
        etag: str,
        record: dict[str, Any],
        fingerprint: str,
        committed: Callable[[str], Response | None],
    ) -> Ticket | Replay:
        if self._now() >= _time(record["expires_at"]):
            return self._take_over(name, etag, fingerprint)
        if record["fingerprint"] != fingerprint:
            raise Conflict(
                "Idempotency-Key was already used with a different request.",
                code="IDEMPOTENCY_KEY_REUSED",
            )
        if record["state"] == "complete":
            return Replay(record["response"])
        return self._settle_pending(name, etag, record, fingerprint, committed)

    def _settle_pending(
        self,
        name: str,
        etag: str,
        record: dict[str, Any],
        fingerprint: str,
        committed: Callable[[str], Response | None],
    ) -> Ticket | Replay:
        response = committed(record["change_id"])
        if response is not None:
            self.complete(Ticket(name, etag, record["change_id"], record), response)
            return Replay(response)
        waited = self._now() - _time(record["started_at"])
        if waited < self._lease:
            retry = max(1, math.ceil((self._lease - waited).total_seconds()))
            raise Conflict(
                "A request with this Idempotency-Key is still in progress.",
                code="IDEMPOTENCY_KEY_IN_PROGRESS",
                retry_after=retry,
            )
        return self._take_over(name, etag, fingerprint)

    def _take_over(self, name: str, etag: str, fingerprint: str) -> Ticket:
        try:
            return self._claim(name, self._new_record(fingerprint), Condition.match(etag))
        except BlobNotFound:
            raise PreconditionFailed(name) from None

    def _new_record(self, fingerprint: str) -> dict[str, Any]:
        """A pending claim; ``claim`` is unique to this attempt, so an attempt that finds
        the record after a lost response can recognise it as its own."""
        now = self._now()
        return {
            "fingerprint": fingerprint,
            "state": "pending",
            "claim": secrets.token_hex(8),
            "change_id": new_change_id(now),
            "started_at": format_timestamp(now),
            "expires_at": format_timestamp(now + self._ttl),
        }

    def _claim(self, name: str, record: dict[str, Any], condition: Condition) -> Ticket:
        etag = self._blobs.write(name, dump(record), condition)
        return Ticket(name, etag, record["change_id"], record)

    def _now(self) -> datetime:
        return self._clock.now()


def _time(text: str) -> datetime:
    return parse_timestamp(text, "idempotency record time")
