"""Request quotas (spec 10.7; issue 12): per user and per service, requests and writes,
refused with ``429 QUOTA_EXCEEDED`` and Retry-After, the same across function instances.

Windows are fixed and aligned to the epoch (``[k*W, (k+1)*W)``). Each bucket, a
(scope, kind, key) with a non-zero limit, has one shared counter blob,
``_quotas/{scope}/{kind}/{sha256}.json`` holding ``{"window": start, "reserved": n}``,
reset in place when the window rolls, so blobs never pile up with time. The key is
hashed: no plain tenant, user or caller id sits in this prefix (a hash of known ids can
be recomputed, so :meth:`Quotas.forget_user` deletes a user's counters anyway).

Batched reservations: an instance reserves ``batch`` tokens at once with an ETag
compare-and-swap (``reserved += min(batch, limit - reserved)``) and spends them from
memory. The shared counter never passes the limit, so instances together admit at most
``limit`` per window, give or take clock skew (an instance whose clock lags spends its
last tokens up to the skew into the next window; a blob's window never moves back).
The price is under-admission: tokens an instance reserved and did not spend are refused
to the others until the window ends, at most ``instances x batch`` per bucket (plus
tokens refunded by requests another bucket refused at the same moment). With
``batch = max(1, min(limit // 20, batch_max))`` that is at most 5% of the limit per
instance, and a reservation (one read, one conditional write) serves ``batch`` requests;
below a limit of 40 every request costs two storage calls per bucket. ``batch_max``
(``MEMNET_QUOTA_BATCH_MAX``, default 50) is set on Azure to the requests one instance
serves at once (the plan's per-instance HTTP concurrency): an instance then never holds
more unspent tokens of a bucket than it can have requests in flight, so the tokens
stranded across instances stay within the load itself however far the plan scales out
(docs/identity.md "Quotas"). A request charges every bucket
that applies, user before service; if one refuses, the tokens taken from the others go
back to this instance's pool. Once a bucket's counter is spent, this instance refuses
it from memory until the window ends. Fixed windows admit up to twice the limit in W
seconds straddling a boundary, as any fixed-window quota does.

Failures: storage being unavailable (:class:`~memnet.ports.StorageUnavailable`) while
reserving admits the request unmetered and logs a
warning with no ids. Quotas protect fair use, not data, and the request itself will
meet the same storage. After 16 lost compare-and-swaps in a row (that
many other reservations landed meanwhile) the request is refused with Retry-After 1.
"""

from __future__ import annotations

import enum
import hashlib
import json
import logging
import math
import threading
from dataclasses import dataclass, field

from memnet.domain.errors import TooManyRequests
from memnet.ports import (
    BlobNotFound,
    BlobStore,
    Clock,
    Condition,
    PreconditionFailed,
    StorageUnavailable,
)
from memnet.services.records import retrying

PREFIX = "_quotas/"
MAX_BATCH = 50
log = logging.getLogger("memnet.services.governance.quotas")


@dataclass(frozen=True)
class QuotaLimits:
    """Limits per window; 0 means no limit (and no storage I/O for that bucket)."""

    user_requests: int = 0  # per (tenant, user), all callers together
    user_writes: int = 0  # the requests that write, per (tenant, user)
    service_requests: int = 0  # per caller id, across all users
    service_writes: int = 0
    window_seconds: int = 60
    batch_max: int = MAX_BATCH  # the most tokens one reservation takes


def batch_size(limit: int, most: int = MAX_BATCH) -> int:
    """Tokens one reservation takes: 5% of the limit, from 1 to ``most``."""
    return max(1, min(limit // 20, most))


@dataclass(frozen=True)
class _Bucket:
    scope: str  # "user" or "service"
    kind: str  # "requests" or "writes"
    name: str  # the counter blob
    limit: int


@dataclass
class _Tokens:
    """This instance's unspent reservation for one bucket in one window."""

    window: int
    left: int = 0
    spent: bool = False  # the shared counter is at the limit for this window
    lock: threading.Lock = field(default_factory=threading.Lock)

    def refund(self) -> None:
        with self.lock:
            self.left += 1


@dataclass(frozen=True)
class _Counter:
    window: int
    reserved: int


class _Outcome(enum.Enum):
    TAKEN = "taken"
    UNMETERED = "unmetered"  # storage failed: admitted without a token
    REFUSED = "refused"
    CONTENDED = "contended"


def counter_name(scope: str, kind: str, *ids: str) -> str:
    """The counter blob of a bucket: the ids hashed, never in the clear."""
    digest = hashlib.sha256(json.dumps(list(ids)).encode()).hexdigest()
    return f"{PREFIX}{scope}/{kind}/{digest}.json"


class Quotas:
    def __init__(self, blobs: BlobStore, clock: Clock, limits: QuotaLimits) -> None:
        self._blobs, self._clock, self._limits = blobs, clock, limits
        self._pool: dict[str, _Tokens] = {}
        self._pool_window = 0
        self._pool_lock = threading.Lock()

    def charge(
        self, caller_id: str, tenant_id: str | None, user_id: str | None, *, write: bool
    ) -> None:
        """Spend one token from each bucket that applies, or raise :class:`TooManyRequests`
        (details: ``scope``, ``kind``, ``limit``, ``window_seconds``). The user's buckets
        apply only when both ``tenant_id`` and ``user_id`` are given."""
        now = self._clock.now().timestamp()
        window = int(now // self._limits.window_seconds) * self._limits.window_seconds
        taken: list[_Tokens] = []
        try:
            for bucket in self._buckets(caller_id, tenant_id, user_id, write):
                tokens = self._tokens(bucket.name, window)
                outcome = self._take(bucket, tokens)
                if outcome is _Outcome.TAKEN:
                    taken.append(tokens)
                elif outcome is not _Outcome.UNMETERED:
                    raise self._refusal(bucket, tokens.window, now, outcome)
        except TooManyRequests:
            for tokens in taken:
                tokens.refund()
            raise

    def forget_user(self, tenant_id: str, user_id: str) -> int:
        """Delete the user's counter blobs (the forget-user job); how many existed."""
        deleted = 0
        for kind in ("requests", "writes"):
            name = counter_name("user", kind, tenant_id, user_id)
            with self._pool_lock:
                self._pool.pop(name, None)
            try:
                self._blobs.delete(name)
                deleted += 1
            except BlobNotFound:
                pass
        return deleted

    def describe(self) -> str:
        """For ``/v1/health``: the limits, no ids."""
        limits = self._limits
        parts = [
            f"{scope} {limit} {kind}"
            for scope, kind, limit in (
                ("user", "requests", limits.user_requests),
                ("user", "writes", limits.user_writes),
                ("service", "requests", limits.service_requests),
                ("service", "writes", limits.service_writes),
            )
            if limit > 0
        ]
        if not parts:
            return "no quotas"
        return f"{', '.join(parts)} per {limits.window_seconds} s (shared counters)"

    def _buckets(
        self, caller_id: str, tenant_id: str | None, user_id: str | None, write: bool
    ) -> list[_Bucket]:
        limits, buckets = self._limits, []
        if tenant_id is not None and user_id is not None:
            ids = (tenant_id, user_id)
            buckets.append(self._bucket("user", "requests", limits.user_requests, ids))
            if write:
                buckets.append(self._bucket("user", "writes", limits.user_writes, ids))
        buckets.append(self._bucket("service", "requests", limits.service_requests, (caller_id,)))
        if write:
            buckets.append(self._bucket("service", "writes", limits.service_writes, (caller_id,)))
        return [bucket for bucket in buckets if bucket.limit > 0]

    @staticmethod
    def _bucket(scope: str, kind: str, limit: int, ids: tuple[str, ...]) -> _Bucket:
        name = counter_name(scope, kind, *ids) if limit > 0 else ""
        return _Bucket(scope, kind, name, limit)

    def _tokens(self, name: str, window: int) -> _Tokens:
        """This instance's tokens for ``name``; past windows' tokens are dropped, so the
        pool holds only the keys seen in the current window."""
        with self._pool_lock:
            if window > self._pool_window:
                self._pool = {n: t for n, t in self._pool.items() if t.window >= window}
                self._pool_window = window
            tokens = self._pool.get(name)
            if tokens is None or tokens.window < window:
                tokens = self._pool[name] = _Tokens(window)
            return tokens

    def _take(self, bucket: _Bucket, tokens: _Tokens) -> _Outcome:
        # One reservation at a time per bucket in this instance: the others wait for it.
        with tokens.lock:
            if tokens.left == 0 and not tokens.spent:
                outcome = self._reserve(bucket, tokens)
                if outcome is not None:
                    return outcome
            if tokens.left == 0:
                return _Outcome.REFUSED
            tokens.left -= 1
            return _Outcome.TAKEN

    def _reserve(self, bucket: _Bucket, tokens: _Tokens) -> _Outcome | None:
        """Refill ``tokens`` from the shared counter; an outcome only when storage failed
        or stayed contended."""
        try:  # a hot bucket's counter is contended by every instance: a longer bound
            retrying(lambda: self._reserve_once(bucket, tokens), attempts=16)
        except PreconditionFailed:
            return _Outcome.CONTENDED
        except StorageUnavailable as exc:
            log.warning("quota counter unreachable, request admitted: %s", type(exc).__name__)
            return _Outcome.UNMETERED
        return None

    def _reserve_once(self, bucket: _Bucket, tokens: _Tokens) -> None:
        counter, condition = self._read(bucket.name)
        window = max(tokens.window, counter.window)  # a lagging clock never resets it back
        reserved = counter.reserved if counter.window == window else 0
        grant = min(batch_size(bucket.limit, self._limits.batch_max), bucket.limit - reserved)
        if grant > 0:
            data = json.dumps({"window": window, "reserved": reserved + grant}).encode()
            self._blobs.write(bucket.name, data, condition)
        tokens.window, tokens.left, tokens.spent = window, max(grant, 0), grant <= 0

    def _read(self, name: str) -> tuple[_Counter, Condition]:
        try:
            blob = self._blobs.read(name)
        except BlobNotFound:
            return _Counter(0, 0), Condition.create_only()
        try:
            found = json.loads(blob.data)
            counter = _Counter(int(found["window"]), int(found["reserved"]))
        except (ValueError, KeyError, TypeError):  # unreadable: start it over, under its ETag
            counter = _Counter(0, 0)
        return counter, Condition.match(blob.etag)

    def _refusal(
        self, bucket: _Bucket, window: int, now: float, outcome: _Outcome
    ) -> TooManyRequests:
        seconds = self._limits.window_seconds
        message = f"The {bucket.scope} {bucket.kind} quota is spent for this window."
        retry_after = max(1, math.ceil(window + seconds - now))
        if outcome is _Outcome.CONTENDED:
            message, retry_after = f"The {bucket.scope} {bucket.kind} quota is contended.", 1
        return TooManyRequests(
            message,
            retry_after=retry_after,
            scope=bucket.scope,
            kind=bucket.kind,
            limit=bucket.limit,
            window_seconds=seconds,
        )
