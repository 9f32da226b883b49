"""A forget job's state (spec 17; issue 11): the record stored under the job's name, as
typed values. :meth:`ForgetJob.as_json` is its one stored form, and what the status
view and the receipt are read from; changes are ``dataclasses.replace`` or the pure
functions here.

Both kinds share one record: ``forget_user`` (its state blob is the user's tombstone)
and ``forget_conversation`` (its cursors, the planned document write and what was
retracted are only in its form). The status moves ``running`` → ``done``, or
``cancelled`` (a conversation's job the user's forget overtook); the phase says where
a running job is (:data:`UserPhase`, :data:`ConversationPhase`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Literal

from memnet.domain.envelope import Json
from memnet.domain.layout import forget_conversation_job_name, forget_job_name

Kind = Literal["forget_user", "forget_conversation"]
Status = Literal["running", "done", "cancelled"]
UserPhase = Literal["deleting", "verifying", "finishing"]
ConversationPhase = Literal["snapshots", "replays", "events", "documents", "exports", "finishing"]
ZERO_CHAIN = "00" * 32


@dataclass(frozen=True)
class Batch:
    """A batch of names recorded before it is deleted (the ledger's ``pending``)."""

    kind: str
    names: tuple[str, ...]
    late: bool = False

    def as_json(self) -> Json:
        return {"kind": self.kind, "names": list(self.names), "late": self.late}


@dataclass(frozen=True)
class Tally:
    """What a kind's deletions came to: how many names, and their hash chain."""

    count: int = 0
    chain: str = ZERO_CHAIN


@dataclass(frozen=True)
class PlannedWrite:
    """A retraction from one document, recorded before it is issued (``pending_write``):
    a rerun issues the identical request, which its idempotency ``key`` answers."""

    namespace: str
    path: str
    etag: str
    ops: list[Json]
    key: str
    profile_id: str | None
    removed: list[str]
    kept: list[str]


@dataclass(frozen=True, kw_only=True)
class ForgetJob:
    """One forget job: who asked for what, where it stands, and what it deleted (fields
    in the stored form's order)."""

    kind: Kind
    forget_id: str
    receipt_id: str
    tenant_id: str
    user_id: str
    conversation_id: str = ""  # forget_conversation: the conversation
    requested_by: str
    started_at: str
    completed_at: str | None = None
    status: Status
    phase: UserPhase | ConversationPhase
    run: str
    sent: bool = False  # forget_user: its message was queued (a hint)
    deleted: Mapping[str, Tally] = field(default_factory=dict)
    late: int = 0
    seq: int = 0
    pending: Batch | None = None
    kept: Mapping[str, Json] = field(default_factory=dict)  # held kinds: why each is kept
    events_after: str = ""
    documents_after: str = ""
    pending_write: PlannedWrite | None = None
    retracted: tuple[Json, ...] = ()
    verification: Json | None = None
    updated_at: str = ""  # set by every save
    not_retracted: tuple[Json, ...] = ()
    error: Json | None = None

    @classmethod
    def from_json(cls, stored: Json) -> ForgetJob:
        values = {f.name: stored[f.name] for f in fields(cls) if f.name in stored}
        values["deleted"] = {k: Tally(**v) for k, v in stored["deleted"].items()}
        pending, planned = stored.get("pending"), stored.get("pending_write")
        if pending:
            values["pending"] = Batch(pending["kind"], tuple(pending["names"]), pending["late"])
        if planned:
            values["pending_write"] = PlannedWrite(**planned)
        values["retracted"] = tuple(stored.get("retracted", ()))
        values["not_retracted"] = tuple(stored.get("not_retracted", ()))
        return cls(**values)

    def as_json(self) -> Json:
        found = asdict(self)
        found.update(
            pending=None if self.pending is None else self.pending.as_json(),
            retracted=list(self.retracted),
            not_retracted=list(self.not_retracted),
        )
        absent = _USER_ABSENT if self.kind == "forget_user" else _CONVERSATION_ABSENT
        return {k: v for k, v in found.items() if k not in absent and (v or k not in _WHEN_SET)}

    @property
    def of_conversation(self) -> bool:
        return self.kind == "forget_conversation"

    def message(self) -> JobMessage:
        """The queue message that runs the job (its ``run`` token names this run)."""
        return JobMessage(
            kind=self.kind,
            tenant_id=self.tenant_id,
            user_id=self.user_id,
            conversation_id=self.conversation_id,
            forget_id=self.forget_id,
            run=self.run,
        )


@dataclass(frozen=True, kw_only=True)
class JobMessage:
    """A ``memnet-forget`` message: the job it runs and the run it belongs to."""

    kind: Kind
    tenant_id: str
    user_id: str
    conversation_id: str = ""
    forget_id: str
    run: str

    @classmethod
    def from_json(cls, body: Json) -> JobMessage:
        return cls(**{f.name: body[f.name] for f in fields(cls) if f.name in body})

    def as_json(self) -> Json:
        return {k: v for k, v in asdict(self).items() if v or k != "conversation_id"}

    @property
    def job_name(self) -> str:
        if self.kind == "forget_user":
            return forget_job_name(self.tenant_id, self.user_id)
        return forget_conversation_job_name(self.tenant_id, self.user_id, self.conversation_id)

    def runs(self, job: ForgetJob) -> bool:
        """Whether the message is for ``job``'s current run (one with an older token is
        a duplicate, or its job was handed to a newer message)."""
        return (job.forget_id, job.run) == (self.forget_id, self.run)


_USER_ABSENT = frozenset(
    {"conversation_id", "events_after", "documents_after", "pending_write", "retracted", "error"}
)
_CONVERSATION_ABSENT = frozenset({"sent"})
_WHEN_SET = frozenset({"not_retracted", "error", "updated_at"})  # absent until set


def counted(job: ForgetJob, batch: Batch) -> ForgetJob:
    """``job`` with ``batch`` folded into its counts and hash chains (see
    :mod:`memnet.services.forget.ledger`), and no batch pending."""
    tally = job.deleted.get(batch.kind, Tally())
    tally = Tally(tally.count + len(batch.names), chained(tally.chain, batch.names))
    return replace(
        job,
        deleted={**job.deleted, batch.kind: tally},
        late=job.late + (len(batch.names) if batch.late else 0),
        seq=job.seq + 1,
        pending=None,
    )


def chained(chain: str, names: list[str] | tuple[str, ...]) -> str:
    """The kind's hash chain after deleting ``names`` in order: each name ``n`` moves it
    to ``sha256(chain || sha256(utf8(n)))``."""
    value = bytes.fromhex(chain)
    for name in names:
        value = hashlib.sha256(value + hashlib.sha256(name.encode()).digest()).digest()
    return value.hex()
