"""A namespace's documents, a page at a time (``GET …/documents/{namespace}/``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from memnet_client.models.fields import JsonObject, items, text


@dataclass(frozen=True)
class ListedDocument:
    """One document of a listing: its path in the namespace, the ETag a write would send
    as ``If-Match``, its ``updated_at``, and the binding it belongs to (``None``: no
    binding of the profile covers it)."""

    path: str
    etag: str
    updated_at: str | None
    binding_id: str | None

    @classmethod
    def from_json(cls, data: JsonObject) -> ListedDocument:
        return cls(
            path=text(data, "path") or "",
            etag=text(data, "etag") or "",
            updated_at=text(data, "updated_at"),
            binding_id=text(data, "binding_id"),
        )


@dataclass(frozen=True)
class DocumentList:
    """One page, in path order; pass ``continuation`` for the next (``None``: no more)."""

    documents: tuple[ListedDocument, ...]
    continuation: str | None
    raw: JsonObject = field(repr=False)

    @classmethod
    def from_json(cls, data: JsonObject) -> DocumentList:
        return cls(
            documents=tuple(ListedDocument.from_json(d) for d in items(data, "documents")),
            continuation=text(data, "continuation"),
            raw=data,
        )
