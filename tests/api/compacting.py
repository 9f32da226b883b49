"""Helpers shared by the compaction and freshness tests: an agent caller and documents
seeded through the real document service."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

from memnet.bootstrap import Services
from memnet.domain.callers import ANY, Caller
from memnet.domain.document_model import Precondition, WriteCommand
from memnet.domain.layout import DocumentRef
from memnet.domain.patching import parse_ops

PROFILE = "project-copilot-v1"
AGENT = Caller("agent", frozenset({"t1"}), frozenset({ANY}), frozenset({"read", "write", "admin"}))
PROJECT = DocumentRef("t1", "u1", "projects", "apollo.json")
DYNAMIC = DocumentRef("t1", "u1", "user", "user_dynamic.json")
PROOF = {"confidence": 0.9, "evidence": {"message_ids": ["m1"]}}


def command(ref: DocumentRef, **kw: Any) -> WriteCommand:
    base: dict[str, Any] = {
        "ref": ref,
        "profile_id": PROFILE,
        "binding_id": None,
        "precondition": Precondition(create=True),
        "idempotency_key": uuid.uuid4().hex,
        "fingerprint": uuid.uuid4().hex,
        "reason": "test",
        "request_id": "req",
    }
    return WriteCommand(**{**base, **kw})


def put(services: Services, ref: DocumentRef, content: dict[str, Any]) -> str:
    """Create (or replace) the document with ``content`` as an admin; its ETag."""
    current = services.documents.load(ref)
    pre = Precondition(if_match=current.etag) if current else Precondition(create=True)
    reply = services.documents.replace(AGENT, command(ref, precondition=pre, content=content))
    return str(reply.body["etag"])


def patch(
    services: Services, ref: DocumentRef, ops: list[dict[str, Any]], **kw: Any
) -> dict[str, Any]:
    """One agent patch of the latest version (rebased if it loses a race)."""
    current = services.documents.load(ref)
    assert current is not None
    cmd = command(
        ref, precondition=Precondition(if_match=current.etag), ops=parse_ops(ops), rebase=True
    )
    return services.documents.patch(AGENT, replace(cmd, **kw))


def content(services: Services, ref: DocumentRef) -> dict[str, Any]:
    stored = services.documents.load(ref)
    assert stored is not None
    return dict(stored.document["content"])


def history(services: Services, ref: DocumentRef) -> list[dict[str, Any]]:
    """The document's audit records, newest first."""
    page = services.documents.history(AGENT, ref, PROFILE, 100)
    return list(page.changes)


def notes(n: int, year: int = 2026, prefix: str = "note") -> list[dict[str, Any]]:
    """``n`` distinct notes, one a day (in words that never look alike)."""
    return [
        {"note": f"{prefix} {i} {uuid.uuid4().hex}", "at": f"{year}-01-01T00:00:{i % 60:02d}Z"}
        for i in range(n)
    ]


def project(notes_: list[Any]) -> dict[str, Any]:
    return {"summary": "Apollo", "facets": {}, "recent_notes": notes_}
