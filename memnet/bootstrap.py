"""The composition root: wires adapters to services from :class:`Settings`.

Built lazily, once per process, on first use (nothing happens at import). Tests build
their own :class:`Services` with :func:`build` and install them with :func:`install`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import timedelta

from memnet.adapters.clock import SystemClock
from memnet.domain.similarity import LexicalSimilarity, Similarity
from memnet.ports import Authenticator, BlobStore, Clock, MessageQueue, SearchIndex
from memnet.services.audit import AuditLog
from memnet.services.context import ContextService
from memnet.services.documents import DocumentService
from memnet.services.events import EventService
from memnet.services.idempotency import IdempotencyStore
from memnet.services.registry import ProfileRegistry, load_registry
from memnet.settings import Settings


@dataclass(frozen=True)
class Services:
    settings: Settings
    blobs: BlobStore
    registry: ProfileRegistry
    authenticator: Authenticator
    documents: DocumentService
    audit: AuditLog
    context: ContextService
    events: EventService
    queue: MessageQueue
    index: SearchIndex


def build(
    settings: Settings,
    *,
    blobs: BlobStore | None = None,
    authenticator: Authenticator | None = None,
    clock: Clock | None = None,
    similarity: Similarity | None = None,
    queue: MessageQueue | None = None,
    index: SearchIndex | None = None,
) -> Services:
    """Wire everything; ``blobs``/``authenticator``/``clock`` override the configured ones."""
    clock = clock or SystemClock()
    blobs = blobs or blob_store(settings)
    registry = load_registry(settings.profiles_dir)
    audit = AuditLog(blobs)
    idempotency = IdempotencyStore(
        blobs,
        clock,
        timedelta(seconds=settings.idempotency_ttl_seconds),
        timedelta(seconds=settings.idempotency_lease_seconds),
    )
    documents = DocumentService(blobs, registry, audit, idempotency, clock)
    context = ContextService(
        blobs,
        registry,
        similarity or LexicalSimilarity(),
        index_ttl=settings.context_index_ttl_seconds,
        semantic_ttl=settings.context_semantic_ttl_seconds,
        read_workers=settings.context_read_workers,
    )
    auth = authenticator or _authenticator(settings)
    queue = queue or message_queue(settings)
    index = index or search_index(settings)
    events = EventService(blobs, index, queue, idempotency, clock)
    return Services(
        settings, blobs, registry, auth, documents, audit, context, events, queue, index
    )


def blob_store(settings: Settings) -> BlobStore:
    if settings.storage == "azure":
        from memnet.adapters.azure.blobstore import AzureBlobStore

        if settings.blob_connection_string:
            store = AzureBlobStore.from_connection_string(
                settings.blob_connection_string, settings.blob_container
            )
        else:
            assert settings.blob_account_url is not None  # Settings.check guarantees one
            store = AzureBlobStore.from_account_url(
                settings.blob_account_url, settings.blob_container
            )
        store.ensure_container()  # once per process, on first use; idempotent
        return store
    from memnet.adapters.local.blobstore import FileBlobStore

    return FileBlobStore(settings.data_dir, settings.blob_container, fsync=settings.local_fsync)


def message_queue(settings: Settings) -> MessageQueue:
    """Azure Storage Queues beside Azure Blob; else a SQLite file in the data directory."""
    if settings.storage == "azure":
        from memnet.adapters.azure.queue import AzureStorageQueue

        if settings.queue_connection_string:
            return AzureStorageQueue.from_connection_string(settings.queue_connection_string)
        assert settings.queue_account_url is not None  # Settings.check guarantees one
        return AzureStorageQueue.from_account_url(settings.queue_account_url)
    from memnet.adapters.local.queue import SqliteQueue

    return SqliteQueue(settings.data_dir / "queue.sqlite3")


def search_index(settings: Settings) -> SearchIndex:
    """Azure AI Search when configured; else the SQLite index in the data directory."""
    if settings.search == "azure":
        from memnet.adapters.azure.search import AzureSearchIndex

        assert settings.search_endpoint is not None  # Settings.check guarantees it
        return AzureSearchIndex.from_settings(
            settings.search_endpoint, settings.search_index_name, settings.search_api_key
        )
    from memnet.adapters.local.search import SqliteSearchIndex

    return SqliteSearchIndex(settings.data_dir / "search.sqlite3", settings.search_max_postings)


def _authenticator(settings: Settings) -> Authenticator:
    from memnet.adapters.local.apikeys import ApiKeyAuthenticator

    assert settings.callers_file is not None  # Settings.check guarantees it
    return ApiKeyAuthenticator.from_file(settings.callers_file)


_lock = threading.Lock()
_services: Services | None = None


def services() -> Services:
    """The process-wide services, built from the environment on first call."""
    global _services
    with _lock:
        if _services is None:
            _services = build(Settings.from_env())
        return _services


def install(replacement: Services | None) -> None:
    """Use ``replacement`` from now on (tests); ``None`` rebuilds from settings next time."""
    global _services
    with _lock:
        _services = replacement
