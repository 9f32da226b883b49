"""How the replay worker writes: its own caller, and the governed write command of one
spec 9.3 patch record (shared by the worker, its retries, the admin review and the dry
run)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from memnet.domain.callers import ANY, Caller
from memnet.domain.document_model import Precondition, WriteCommand
from memnet.domain.envelope import canonical
from memnet.domain.layout import DocumentRef, SnapshotRef
from memnet.domain.patching import parse_ops
from memnet.domain.replay_plan import PatchRecord
from memnet.services.replay.records import ReplayRecord

REPLAY_QUEUE = "memnet-replay"
REPLAY_CALLER = "memnet-replay"


def command(
    ref: SnapshotRef,
    about: ReplayRecord | Planned,
    patch: PatchRecord,
    base: str | None,
    rebase: bool = True,
) -> WriteCommand:
    """The governed write of one patch record of ``about``'s plan, based on ``base``."""
    return WriteCommand(
        ref=DocumentRef(ref.tenant_id, ref.user_id, patch.target_namespace, patch.target_path),
        profile_id=about.profile_id,
        binding_id=patch.target_binding_id,
        precondition=Precondition(if_match=base, create=base is None),
        idempotency_key=patch.idempotency_key,
        fingerprint=fingerprint(patch.as_json()),
        reason="replay_update",
        request_id=ref.replay_id,
        evidence=patch.evidence,
        confidence=patch.confidence,
        ops=parse_ops(patch.ops),
        rebase=rebase,
        origin={"replay_id": ref.replay_id, "extractor": about.extractor},
        holds={int(i): tuple(r) for i, r in patch.holds.items()},
    )


@dataclass(frozen=True)
class Planned:
    """Whose plan a patch record is, before any record holds it (the dry run)."""

    profile_id: str | None
    extractor: dict[str, Any] | None


def replay_caller(ref: SnapshotRef, profile_id: str | None, clearance: str | None) -> Caller:
    """The replay's own identity: reads and writes the snapshot's user, with its profile,
    bound to that user as the user's own token is (so never a shared document), with the
    clearance of whoever uploaded the snapshot (:func:`uploader_clearance`): a transcript
    is the uploader's input, and its replay neither sees nor changes more than the
    uploader may (nor tells it more in the replay's status)."""
    return Caller(
        REPLAY_CALLER,
        tenants=frozenset({ref.tenant_id}),
        profiles=frozenset({profile_id or ANY}),
        roles=frozenset({"read", "write"}),
        services=frozenset({ANY}),
        user_id=ref.user_id,
        clearance=clearance,
    )


def uploader_clearance(caller: Caller) -> str | None:
    """The clearance the replay of ``caller``'s upload has: the uploader's own, every
    class for an admin that names none (as its own writes have), else none (the lowest
    class; so too for a snapshot that landed in storage without an upload)."""
    return caller.acting_clearance()


def fingerprint(value: Any) -> str:
    return hashlib.sha256(canonical(value)).hexdigest()
