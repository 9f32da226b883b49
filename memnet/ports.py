"""Ports: the small interfaces the services depend on (docs/architecture.md, "The layers").

Every storage port has an embedded adapter (the default) and an Azure adapter, and
both pass one contract suite (``tests/contract``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from memnet.domain.callers import Caller
from memnet.domain.replay_contract import ExtractionRequest


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


class BlobTooLarge(StorageError):
    """A bounded read (:meth:`BlobStore.read` with ``max_bytes``) found the blob larger
    than the bound, and read no more of it than the bound. Permanent: the same read of
    the same blob is refused again. ``size``: the blob's size as far as the store learnt
    it (at least ``max_bytes + 1``)."""

    def __init__(self, name: str, size: int, max_bytes: int) -> None:
        super().__init__(f"blob {name} is {size} bytes; the read allows {max_bytes}")
        self.name, self.size, self.max_bytes = name, size, max_bytes


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


@dataclass(frozen=True)
class BlobInfo:
    """One listed blob: its name, when it was last written (timezone-aware UTC) and its
    size in bytes (None where an adapter's listing does not say it)."""

    name: str
    last_modified: datetime
    size: int | None = None


@dataclass(frozen=True)
class BlobPage:
    """One page of a listing. ``continuation`` is opaque (the file store: the last name
    returned; Azure: the service's marker); None when the listing is complete."""

    items: tuple[BlobInfo, ...]
    continuation: str | None


@dataclass(frozen=True)
class Residue:
    """Files a store kept under a prefix that are no blobs, and their size in bytes
    (:meth:`BlobStore.remove_residue`)."""

    files: int = 0
    size: int = 0

    def __add__(self, other: Residue) -> Residue:
        return Residue(self.files + other.files, self.size + other.size)


class BlobStore(Protocol):
    """Blob semantics (docs/architecture.md: per-blob conditional writes, prefix listing,
    no multi-blob transactions). Names are ``/``-separated, relative to one container."""

    def read(self, name: str, *, max_bytes: int | None = None) -> Blob:
        """Return the blob or raise :class:`BlobNotFound`.

        ``max_bytes`` bounds a read of a blob whose size our own writes do not control
        (one written straight to storage): a larger blob raises :class:`BlobTooLarge`
        having transferred at most ``max_bytes + 1`` of its bytes, so memory and I/O
        are bounded by the caller, never by the blob. None: no bound."""
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

    def list_folder(self, prefix: str) -> Iterator[str]:
        """The names directly in the folder ``prefix`` (empty, or ending in ``/``), in
        lexical order: a blob's full name, or a sub-folder's name ending in ``/`` (the
        common prefix of the blobs below it; Azure's listing with a delimiter). Costs the
        entries of this folder, never what lies below them. A folder is listed while a
        blob lies below it (on the embedded store an empty one may linger after a crash)."""
        ...

    def list_page(self, prefix: str, continuation: str | None, limit: int) -> BlobPage:
        """At most ``limit`` blobs starting with ``prefix``, in lexical order, resuming
        after the page whose ``continuation`` is given (None: from the start). A long
        job lists a page, persists the continuation, and can resume in another process;
        memory is bounded by ``limit``, never by the number of blobs."""
        ...

    def remove_residue(self, prefix: str) -> Residue:
        """Remove every byte the store keeps under ``prefix`` that is no blob, and say
        how much there was: a forget (spec 17) leaves nothing a listing cannot see. The
        file store keeps the temp file of a write a crash cut short (the whole record
        it was writing), an ETag sidecar whose blob is gone, and directories left empty
        (their names are blob names); a write in flight under the prefix loses its temp
        file and fails (retryable), so call it where the prefix's writes are refused.
        Azure Blob keeps nothing but blobs (a write is one Put Blob, never staged
        blocks): nothing to remove."""
        ...

    def describe(self) -> str:
        """A short, secret-free description for ``/v1/health``."""
        ...


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...


# -- queues (docs/decisions.md "Foundations") ----------------------------------------------


@dataclass(frozen=True)
class QueueMessage:
    """A received message. ``pop_receipt`` proves this receiver still holds it; after the
    visibility timeout another receiver may get it with a higher ``dequeue_count``."""

    id: str
    pop_receipt: str
    body: str
    dequeue_count: int


# The queue contract's limits, Azure Storage Queues' own (every adapter checks them).
TTL_SECONDS = 7 * 24 * 3600
MAX_DELAY_SECONDS = TTL_SECONDS
MAX_MESSAGES = 32
# Azure caps a message at 64 KiB as stored; bodies travel base64-encoded (the Functions
# trigger expects that), so 48 KiB of UTF-8 text is the most any adapter can accept.
MAX_BODY_BYTES = 48 * 1024
# Azure's rule: 3-63 of [a-z0-9-], starting and ending alphanumeric, no "--".
_QUEUE_NAME = re.compile(r"(?!.*--)[a-z0-9][a-z0-9-]{1,61}[a-z0-9]")


def check_queue_name(queue: str) -> None:
    """Azure's queue naming rule; :class:`ValueError` otherwise."""
    if not _QUEUE_NAME.fullmatch(queue):
        raise ValueError(f"invalid queue name: {queue!r}")


def check_body(body: str) -> None:
    """At most :data:`MAX_BODY_BYTES` of UTF-8; :class:`ValueError` otherwise."""
    size = len(body.encode("utf-8"))
    if size > MAX_BODY_BYTES:
        raise ValueError(f"message body is {size} bytes; the limit is {MAX_BODY_BYTES}")


def check_bound(max_bytes: int | None) -> None:
    """A read's ``max_bytes`` (:meth:`BlobStore.read`) is None or at least 0;
    :class:`ValueError` otherwise."""
    if max_bytes is not None and max_bytes < 0:
        raise ValueError(f"max_bytes must be at least 0, not {max_bytes}")


def check_folder(prefix: str) -> None:
    """A folder (:meth:`BlobStore.list_folder`) is empty, or names ending in ``/``
    (no empty segment); :class:`ValueError` otherwise."""
    if prefix and (not prefix.endswith("/") or "" in prefix[:-1].split("/")):
        raise ValueError(f"a folder is empty or names ending in '/', not {prefix[:100]!r}")


def check_range(name: str, value: int, low: int, high: int) -> None:
    if not low <= value <= high:
        raise ValueError(f"{name} must be between {low} and {high}, not {value}")


class MessageQueue(Protocol):
    """Azure Storage Queue semantics on every adapter: at-least-once delivery, visibility
    timeout, dequeue count, delayed messages. Queue names: ``[a-z0-9-]{3,63}``. Bodies are
    text; the Azure adapter sends them base64-encoded as the Functions trigger expects."""

    def send(self, queue: str, body: str, *, delay_seconds: int = 0) -> str:
        """Enqueue ``body`` (visible after ``delay_seconds``); return the message id."""
        ...

    def receive(
        self, queue: str, *, max_messages: int = 16, visibility_timeout: int = 30
    ) -> list[QueueMessage]:
        """Up to ``max_messages`` visible messages, hidden for ``visibility_timeout`` s."""
        ...

    def delete(self, queue: str, message: QueueMessage) -> None:
        """Remove a processed message; :class:`PreconditionFailed` if its pop receipt is
        stale (it became visible again and someone else received it)."""
        ...

    def release(self, queue: str, message: QueueMessage, *, delay_seconds: int = 0) -> None:
        """Make a received message visible again after ``delay_seconds`` (a retry)."""
        ...

    def count(self, queue: str) -> int:
        """Approximate number of messages, visible or not (for health and tests)."""
        ...

    def erase_deleted(self) -> None:
        """Leave no deleted message readable in the queue's storage (a forget's last
        step, spec 17): the embedded queue rewrites its file and empties its WAL. Azure
        Storage Queues: nothing a client can do or read (the service's storage is not
        the app's to rewrite)."""
        ...

    def describe(self) -> str: ...


# -- search index (docs/decisions.md "Events and search") -----------------------------------


@dataclass(frozen=True)
class IndexedEvent:
    """What the search index holds for one event digest (spec 9.2); derived from the
    event blob, never authoritative."""

    tenant_id: str
    user_id: str
    event_id: str
    timestamp: str  # RFC 3339 with offset
    service_id: str
    source_type: str
    digest: str
    keywords: tuple[str, ...] = ()
    project_ids: tuple[str, ...] = ()
    snapshot_uri: str | None = None
    evidence: str | None = None  # JSON text, retrievable only
    sensitivity: str | None = None  # the class label, ``profile_id:class``; None: none


@dataclass(frozen=True)
class EventQuery:
    """A search scoped to one user; adapters filter by tenant and user on every query."""

    tenant_id: str
    user_id: str
    text: str = ""
    top_k: int = 10
    since: str | None = None  # inclusive RFC 3339
    until: str | None = None  # exclusive RFC 3339
    service_ids: tuple[str, ...] = ()
    project_ids: tuple[str, ...] = ()
    source_types: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    # Class labels the asker may see besides unclassified events (None: every event);
    # filtered inside the index, as tenant and user are, lexical and dense alike.
    classes: tuple[str, ...] | None = None


@dataclass(frozen=True)
class EventHit:
    event_id: str
    score: float
    timestamp: str


class SearchIndex(Protocol):
    def upsert(self, events: list[IndexedEvent]) -> None:
        """Insert or replace (merge_or_upload) by (tenant, user, event_id)."""
        ...

    def delete(self, tenant_id: str, user_id: str, event_ids: list[str]) -> None:
        """Remove entries; missing ones are ignored."""
        ...

    def search(self, query: EventQuery) -> list[EventHit]:
        """Best first: BM25 over digest and keywords when ``text`` is set, else newest
        first. Only the query's tenant and user, whatever else it says."""
        ...

    def list_event_ids(
        self, tenant_id: str | None, user_id: str | None = None
    ) -> Iterator[tuple[str, str, str]]:
        """(tenant_id, user_id, event_id) of every entry of one user, one tenant, or
        (``tenant_id`` None) the whole index (for reindex)."""
        ...

    def erase_deleted(self) -> None:
        """Leave no deleted entry readable in the index's storage, not only unfindable
        (a forget's last step, spec 17): the embedded index rewrites its file and
        empties its WAL. Azure AI Search drops deleted documents from its segments when
        it merges them, on its own schedule: no call forces it."""
        ...

    def describe(self) -> str: ...


@runtime_checkable
class VectorIndex(Protocol):
    """Event vectors beside a search index (issue 16, hybrid retrieval), of one embedding
    model at a time: a vector of another model or text is stale."""

    def put_vectors(
        self, tenant_id: str, user_id: str, model: str, rows: list[tuple[str, str, list[float]]]
    ) -> int:
        """Store (event_id, text_hash, vector) for events the index holds; the number stored."""
        ...

    def stale_vectors(
        self, tenant_id: str, user_id: str, model: str, wanted: list[tuple[str, str]]
    ) -> list[str]:
        """The event ids of (event_id, text_hash) with no vector of this model and text."""
        ...

    def nearest(self, query: EventQuery, model: str, vector: list[float]) -> list[EventHit]:
        """Best first by cosine, the query's user and filters only (its text unused)."""
        ...


# -- embedders (issue 16: hybrid retrieval) -------------------------------------------------


class EmbedderError(Exception):
    """No vectors for a batch of texts. ``transient``: a retry may succeed (timeout,
    connection, 429, 5xx, no identity token yet); otherwise the settings or the server's
    answers are wrong and retrying will not help. The message never quotes a text."""

    def __init__(self, message: str, *, transient: bool) -> None:
        super().__init__(message)
        self.transient = transient


class Embedder(Protocol):
    """Turns texts into vectors of one fixed size for semantic search. ``model`` names
    the model *and* the vector size (``"text-embedding-3-small@1536"``): when it changes,
    every stored vector is stale and must be embedded again."""

    @property
    def model(self) -> str: ...

    @property
    def dimensions(self) -> int: ...

    def embed(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, in the order of ``texts``, each of ``dimensions`` finite
        floats (not necessarily unit length: compare by cosine); an empty list for no
        texts. :class:`EmbedderError` otherwise."""
        ...

    def describe(self) -> str: ...


class Authenticator(Protocol):
    """Turns request headers into a :class:`~memnet.domain.callers.Caller` (spec 16.1)."""

    def authenticate(self, headers: Mapping[str, str]) -> Caller:
        """Return the caller the headers prove, or raise
        :class:`~memnet.domain.errors.Unauthenticated`."""
        ...

    def describe(self) -> str: ...


# -- snapshot keys (spec 16.2; docs/replay.md "Encryption and keys") ------------------------


class KeyProviderError(Exception):
    """A key-encryption key could not wrap or unwrap. ``transient``: retrying may work
    (the vault is unreachable or throttling); otherwise the key is wrong, missing or
    refused and retrying will not help."""

    def __init__(self, message: str, *, transient: bool) -> None:
        super().__init__(message)
        self.transient = transient


@dataclass(frozen=True)
class WrappedKey:
    """A data key wrapped by a key-encryption key, with what unwrapping it needs."""

    provider: str  # "local-file" or "azure-keyvault"
    key_id: str  # the KEK's id (for Key Vault the versioned key URL)
    algorithm: str  # "A256KW" (RFC 3394) or "RSA-OAEP-256"
    wrapped: bytes


class KeyProvider(Protocol):
    """Wraps and unwraps per-snapshot data keys with a key-encryption key that never
    leaves the provider (a local key file, or Azure Key Vault)."""

    def wrap(self, data_key: bytes) -> WrappedKey:
        """Wrap ``data_key`` with the current KEK; :class:`KeyProviderError` otherwise."""
        ...

    def unwrap(self, wrapped: WrappedKey) -> bytes:
        """The data key; :class:`KeyProviderError` when the KEK is unknown, wrong or
        unreachable."""
        ...

    def describe(self) -> str: ...


# -- extractors (spec 13, 9.3) ------------------------------------------------------------


class ExtractorError(Exception):
    """The extractor produced nothing usable. ``transient``: a retry may succeed (timeout,
    429, 5xx); otherwise the failure is recorded in the replay's status."""

    def __init__(self, message: str, *, transient: bool) -> None:
        super().__init__(message)
        self.transient = transient


class Extractor(Protocol):
    """Turns a conversation into a structured replay output (digests and patches, see
    :mod:`memnet.domain.replay_contract`). The output is untrusted: the replay worker
    validates every part of it and records what it rejects."""

    name: str
    version: str

    def extract(self, request: ExtractionRequest) -> Any:
        """The raw output (JSON-like), or :class:`ExtractorError`."""
        ...
