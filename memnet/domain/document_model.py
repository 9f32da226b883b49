"""The document capability's data (spec 10.1-10.3): a stored document as read, a write's
precondition, and a parsed write command; shared by
:mod:`memnet.services.documents.service`, the API layer and context assembly."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from memnet.domain.envelope import serialise
from memnet.domain.layout import DocumentRef
from memnet.domain.patching import Op


@dataclass(frozen=True)
class StoredDocument:
    etag: str
    document: dict[str, Any]
    data: bytes = b""  # the stored bytes ``document`` was parsed from, if known

    def json_bytes(self) -> bytes:
        """``document`` as JSON text: the bytes it was parsed from when known (parsed
        already, so valid JSON; no need to serialise it again), else serialised."""
        return self.data or serialise(self.document).encode()


@dataclass(frozen=True)
class Precondition:
    """``If-Match: <etag>`` or, to create, ``If-None-Match: *``."""

    if_match: str | None = None
    create: bool = False


@dataclass(frozen=True)
class WriteCommand:
    """A PATCH (``ops``) or PUT (``content``) after parsing; policy is not checked yet."""

    ref: DocumentRef
    profile_id: str | None
    binding_id: str | None
    precondition: Precondition
    idempotency_key: str
    fingerprint: str
    reason: str
    request_id: str
    evidence: Any = None
    confidence: float | None = None
    ops: list[Op] = field(default_factory=list)
    content: dict[str, Any] | None = None
    rebase: bool = False  # a stale If-Match is moved to the latest version when ops commute
    origin: dict[str, Any] | None = None  # who produced the ops (a replay, its extractor)
    reason_codes: list[str] | None = None  # a job's finer reasons, kept in the audit record
    # op index -> why the replay's poisoning guard holds it (set at planning, kept in the plan)
    holds: Mapping[int, tuple[str, ...]] = field(default_factory=dict)
    reverted_to: str | None = None  # a revert (reason ``revert``): the version written back
    undone: str | None = None  # an undo (reason ``revert``): the change it inverts
