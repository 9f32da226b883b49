"""Results about documents: a document with its ETag, a write's answer, history
and the assembled context."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from memnet_client.models.fields import JsonObject, items, text


@dataclass(frozen=True)
class Document:
    """One document (spec 9.1): its ``content``, the ``etag`` to send as ``If-Match``
    with the next write, and ``change_id``, the version (its newest audit record)."""

    etag: str
    content: Any
    change_id: str | None
    schema_id: str | None
    schema_version: str | None
    updated_at: str | None
    updated_by: str | None
    expires_at: str | None  # a short-lived document's expiry, else None
    envelope: JsonObject = field(repr=False)
    raw: JsonObject = field(repr=False)

    @classmethod
    def from_envelope(cls, etag: str, envelope: JsonObject, raw: JsonObject) -> Document:
        version = envelope.get("schema_version")
        return cls(
            etag=etag,
            content=envelope.get("content"),
            change_id=text(envelope, "change_id"),
            schema_id=text(envelope, "schema_id"),
            schema_version=None if version is None else str(version),
            updated_at=text(envelope, "updated_at"),
            updated_by=text(envelope, "updated_by"),
            expires_at=text(envelope, "expires_at"),
            envelope=envelope,
            raw=raw,
        )

    @classmethod
    def from_json(cls, data: JsonObject) -> Document:
        return cls.from_envelope(str(data["etag"]), data["document"], data)


@dataclass(frozen=True)
class WriteResult:
    """The answer to a PATCH or PUT. ``document`` is ``None`` for a caller without the
    read role; ``rebased_from`` is the stale ETag the server rebased from; ``replayed``
    means the server answered an earlier request with the same idempotency key."""

    etag: str
    document: Document | None
    created: bool
    unchanged: bool
    redirected_ops: tuple[JsonObject, ...]
    rebased_from: str | None
    replayed: bool
    raw: JsonObject = field(repr=False)

    @classmethod
    def from_json(cls, data: JsonObject, *, status: int, replayed: bool) -> WriteResult:
        etag = str(data["etag"])
        envelope = data.get("document")
        return cls(
            etag=etag,
            document=Document.from_envelope(etag, envelope, data) if envelope else None,
            created=status == 201,
            unchanged=data.get("unchanged") is True,
            redirected_ops=items(data, "redirected_ops"),
            rebased_from=text(data, "rebased_from"),
            replayed=replayed,
            raw=data,
        )


@dataclass(frozen=True)
class Change:
    """One audit record of a document's history."""

    change_id: str
    operation: str
    actor: str | None
    timestamp: str | None
    reason: str | None
    ops: tuple[JsonObject, ...]
    raw: JsonObject = field(repr=False)

    @classmethod
    def from_json(cls, data: JsonObject) -> Change:
        return cls(
            change_id=str(data["change_id"]),
            operation=str(data.get("operation")),
            actor=text(data, "actor"),
            timestamp=text(data, "timestamp"),
            reason=text(data, "reason"),
            ops=items(data, "ops"),
            raw=data,
        )


@dataclass(frozen=True)
class History:
    """One page of a document's changes, newest first; pass ``next_before`` as
    ``before`` for the next page (``None``: no more)."""

    etag: str | None
    changes: tuple[Change, ...]
    next_before: str | None
    truncated: bool
    raw: JsonObject = field(repr=False)

    @classmethod
    def from_json(cls, data: JsonObject) -> History:
        return cls(
            etag=text(data, "etag"),
            changes=tuple(Change.from_json(c) for c in items(data, "changes")),
            next_before=text(data, "next_before"),
            truncated=data.get("truncated") is True,
            raw=data,
        )


@dataclass(frozen=True)
class Version:
    """A past version of a document (``as_of``): the ``document`` as it was after
    ``change_id`` (its ``etag`` is ``latest_etag``, the current version's: the one to
    send as ``If-Match`` when writing it back)."""

    change_id: str
    latest_etag: str
    document: Document
    raw: JsonObject = field(repr=False)

    @classmethod
    def from_json(cls, data: JsonObject) -> Version:
        latest = str(data["latest_etag"])
        return cls(
            change_id=str(data["change_id"]),
            latest_etag=latest,
            document=Document.from_envelope(latest, data["document"], data),
            raw=data,
        )


@dataclass(frozen=True)
class Diff:
    """The RFC 6902 ``ops`` (paths under ``/content``) that turn version ``from_id``
    into version ``to_id``."""

    from_id: str
    to_id: str
    ops: tuple[JsonObject, ...]
    raw: JsonObject = field(repr=False)

    @classmethod
    def from_json(cls, data: JsonObject) -> Diff:
        return cls(str(data["from"]), str(data["to"]), items(data, "ops"), data)


@dataclass(frozen=True)
class ContextDocument:
    binding_id: str
    namespace: str
    path: str
    document: Document

    @classmethod
    def from_json(cls, data: JsonObject) -> ContextDocument:
        return cls(
            binding_id=str(data["binding_id"]),
            namespace=str(data["namespace"]),
            path=str(data["path"]),
            document=Document.from_json(data),
        )


@dataclass(frozen=True)
class Context:
    """The memory to inject at conversation start, in read-priority order."""

    documents: tuple[ContextDocument, ...]
    selected_project_id: str | None
    dropped_bindings: tuple[JsonObject, ...]
    warnings: tuple[JsonObject, ...]
    rendered: str | None
    routing_debug: JsonObject | None
    provenance: tuple[JsonObject, ...]  # asked for: each document's items' origins
    raw: JsonObject = field(repr=False)

    @classmethod
    def from_json(cls, data: JsonObject) -> Context:
        debug = data.get("routing_debug")
        return cls(
            documents=tuple(ContextDocument.from_json(d) for d in items(data, "documents")),
            selected_project_id=text(data, "selected_project_id"),
            dropped_bindings=items(data, "dropped_bindings"),
            warnings=items(data, "warnings"),
            rendered=text(data, "rendered"),
            routing_debug=debug if isinstance(debug, Mapping) else None,
            provenance=items(data, "provenance"),
            raw=data,
        )
