"""Audit records (spec 19.2): one change of one document, as stored, and how folding
them reproduces the document. Pure: :mod:`memnet.services.documents.audit` reads and
writes them.

A record names the ``prev_change_id`` it was based on and the ops it applied (after
planning: redirects, upsert merges and id stamps included), or, for a create or a
replace, the ``base`` envelope the ops start from. ``post_etag`` is not stored: history
derives it (the next record's ``pre_etag``, or the document's current ETag).
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, TypeGuard

from memnet.domain.envelope import EXPIRES_AT, FIELD_ORDER, Json, canonical
from memnet.domain.layout import DocumentRef
from memnet.domain.patching import apply_ops, parse_ops

CHANGE_ID = re.compile(r"chg_[0-9a-f]{28}")
_LAST_MILLIS = int(datetime.max.replace(tzinfo=UTC).timestamp() * 1000)


def is_change_id(value: object) -> TypeGuard[str]:
    """Whether ``value`` is a change id: its shape, and an instant a clock can name (its
    time part past the year 9999 is no id :func:`new_change_id` mints)."""
    return (
        isinstance(value, str)
        and CHANGE_ID.fullmatch(value) is not None
        and int(value[4:16], 16) <= _LAST_MILLIS
    )


def new_change_id(now: datetime) -> str:
    """Time-sortable: 12 hex digits of the Unix milliseconds of ``now`` (the service's
    Clock), then 16 random hex digits."""
    return f"chg_{int(now.timestamp() * 1000):012x}{secrets.token_hex(8)}"


def change_time(change_id: str) -> datetime:
    """When a change id was minted (its first 12 hex digits are Unix milliseconds)."""
    return datetime.fromtimestamp(int(change_id[4:16], 16) / 1000, UTC)


def ops_sha256(ops: list[Json]) -> str:
    return hashlib.sha256(canonical(ops)).hexdigest()


@dataclass(frozen=True)
class AuditRecord:
    """One committed (or, off the chain, orphaned) change. Members after ``expires_at``
    are stored only when set; ``rebased_from`` is stored when ``rebased`` (None: the
    document was created meanwhile by another writer)."""

    change_id: str
    prev_change_id: str | None
    operation: str  # "create", "patch" or "replace"
    ref: DocumentRef
    binding_id: str
    profile_id: str
    actor: str
    timestamp: str
    reason: str
    pre_etag: str | None
    ops: list[Json]
    ops_sha256: str
    evidence: Any = None
    confidence: float | None = None
    base: Json | None = None
    request_id: str | None = None
    idempotency_key_sha256: str | None = None
    expires_at: str | None = None  # the document's, after this change
    redirected_ops: list[Json] | None = None  # a patch's, even when empty
    upserts: list[Json] | None = None
    origin: Json | None = None  # who produced the ops (a replay, a review)
    reason_codes: list[str] | None = None
    migration: Json | None = None  # {"from", "to"}: the schema versions a change migrated
    rebased: bool = False
    rebased_from: str | None = None
    reverted_to: str | None = None  # a revert: the change whose version it wrote back
    undone: str | None = None  # an undo: the change whose inverse it applied
    extra: Json = field(default_factory=dict)  # members this version does not know

    def as_json(self) -> Json:
        found: Json = {
            "change_id": self.change_id,
            "prev_change_id": self.prev_change_id,
            "operation": self.operation,
            **self.ref.as_json(),
        }
        for name in _ALWAYS[3:]:
            found[name] = getattr(self, name)
        for name in _WHEN_SET:
            if getattr(self, name) is not None:
                found[name] = getattr(self, name)
        if self.rebased:
            found["rebased_from"] = self.rebased_from
        return {**found, **self.extra}

    @classmethod
    def from_json(cls, stored: Json) -> AuditRecord:
        ref = DocumentRef(
            stored["tenant_id"], stored["user_id"], stored["namespace"], stored["path"]
        )
        known: Json = {name: stored.get(name) for name in (*_ALWAYS, *_WHEN_SET)}
        extra = {k: v for k, v in stored.items() if k not in _STORED}
        rebased = "rebased_from" in stored
        rebased_from = stored.get("rebased_from")
        return cls(**known, ref=ref, rebased=rebased, rebased_from=rebased_from, extra=extra)

    def with_ops(self, ops: list[Json]) -> AuditRecord:
        """This record applying ``ops`` instead (its hash follows)."""
        return replace(self, ops=ops, ops_sha256=ops_sha256(ops))

    def apply(self, document: Json | None, max_chars: int | None = None) -> Json:
        """The document after this change; the service and history folding both use
        this (``max_chars``: see :func:`memnet.domain.patching.apply_ops`)."""
        result = document if document is not None else {}
        if self.base is not None:
            result = {**self.base, "created_at": result.get("created_at", self.timestamp)}
        result = apply_ops(result, parse_ops(self.ops), max_chars)  # on a deep copy
        result.update(updated_at=self.timestamp, updated_by=self.actor, change_id=self.change_id)
        result.pop(EXPIRES_AT, None)  # each change sets it anew: its binding's TTL, or none
        if self.expires_at is not None:
            result[EXPIRES_AT] = self.expires_at
        return dict(sorted(result.items(), key=lambda kv: _FIELD_ORDER.get(kv[0], 99)))


def fold(records: Iterable[AuditRecord]) -> Json | None:
    """Fold records oldest first into the document they produce."""
    document: Json | None = None
    for record in records:
        document = record.apply(document)
    return document


_ALWAYS = (
    "change_id",
    "prev_change_id",
    "operation",
    "binding_id",
    "profile_id",
    "actor",
    "timestamp",
    "reason",
    "pre_etag",
    "ops",
    "ops_sha256",
    "evidence",
    "confidence",
    "base",
    "request_id",
    "idempotency_key_sha256",
)
_WHEN_SET = (
    EXPIRES_AT,
    "redirected_ops",
    "upserts",
    "origin",
    "reason_codes",
    "migration",
    "reverted_to",
    "undone",
)
_STORED = frozenset(
    {*_ALWAYS, *_WHEN_SET, "rebased_from", "tenant_id", "user_id", "namespace", "path"}
)
_FIELD_ORDER = {name: i for i, name in enumerate(FIELD_ORDER)}
