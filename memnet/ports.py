"""Ports: the small interfaces the services depend on (ARCHITECTURE.md section 1).

Every storage port has an embedded adapter (the default) and an Azure adapter, and
both pass one contract suite (``tests/contract``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol


class StorageError(Exception):
    """Base of the errors a storage adapter may raise; adapters map SDK errors to these."""


class BlobNotFound(StorageError):
    def __init__(self, name: str) -> None:
        super().__init__(f"blob not found: {name}")
        self.name = name


class PreconditionFailed(StorageError):
    """The write's condition did not hold: ETag mismatch, or create-only on an existing blob."""

    def __init__(self, name: str, current_etag: str | None = None) -> None:
        super().__init__(f"precondition failed: {name}")
        self.name = name
        self.current_etag = current_etag


class StorageUnavailable(StorageError):
    """A transient dependency failure (maps to 503)."""


@dataclass(frozen=True)
class Blob:
    name: str
    data: bytes
    etag: str


@dataclass(frozen=True)
class Condition:
    """The precondition of a blob write or delete. Every write states one.

    ``etag`` set: the blob must exist with exactly this ETag (If-Match).
    ``absent``: the blob must not exist (create-only, If-None-Match: *).
    Neither: unconditional, used only where overwriting is the point.
    """

    etag: str | None = None
    absent: bool = False

    @classmethod
    def match(cls, etag: str) -> Condition:
        return cls(etag=etag)

    @classmethod
    def create_only(cls) -> Condition:
        return cls(absent=True)

    @classmethod
    def unconditional(cls) -> Condition:
        return cls()


class BlobStore(Protocol):
    """Blob semantics (ARCHITECTURE.md: per-blob conditional writes, prefix listing,
    no multi-blob transactions). Names are ``/``-separated, relative to one container."""

    def read(self, name: str) -> Blob:
        """Return the blob or raise :class:`BlobNotFound`."""
        ...

    def read_if_changed(self, name: str, etag: str) -> Blob | None:
        """Like :meth:`read`, but None when the blob still has ``etag`` (If-None-Match):
        lets callers cache what they derive from a blob without re-reading it."""
        ...

    def write(self, name: str, data: bytes, condition: Condition) -> str:
        """Write the blob if ``condition`` holds and return its new ETag.

        Raises :class:`PreconditionFailed` when it does not (for a create-only write
        on an existing blob too). The ETag changes on every successful write."""
        ...

    def delete(self, name: str, condition: Condition = Condition()) -> None:
        """Delete the blob; :class:`BlobNotFound` if absent, :class:`PreconditionFailed`
        if an ETag condition does not hold."""
        ...

    def list_names(self, prefix: str) -> Iterator[str]:
        """Yield the names of all blobs starting with ``prefix``, in lexical order."""
        ...

    def describe(self) -> str:
        """A short, secret-free description for ``/v1/health``."""
        ...


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...
