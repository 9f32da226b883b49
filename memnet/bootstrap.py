"""The composition root: wires adapters to services from :class:`Settings`.

Built lazily, once per process, on first use (nothing happens at import). Tests build
their own :class:`Services` with :func:`build` and install them with :func:`install`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import timedelta

from memnet.audit import AuditLog
from memnet.auth import Authenticator
from memnet.clock import SystemClock
from memnet.context import ContextService
from memnet.documents import DocumentService
from memnet.idempotency import IdempotencyStore
from memnet.ports import BlobStore, Clock
from memnet.registry import ProfileRegistry, load_registry
from memnet.settings import Settings
from memnet.similarity import LexicalSimilarity, Similarity


@dataclass(frozen=True)
class Services:
    settings: Settings
    blobs: BlobStore
    registry: ProfileRegistry
    authenticator: Authenticator
    documents: DocumentService
    audit: AuditLog
    context: ContextService


def build(
    settings: Settings,
    *,
    blobs: BlobStore | None = None,
    authenticator: Authenticator | None = None,
    clock: Clock | None = None,
    similarity: Similarity | None = None,
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
    context = ContextService(blobs, registry, similarity or LexicalSimilarity())
    auth = authenticator or _authenticator(settings)
    return Services(settings, blobs, registry, auth, documents, audit, context)


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

    return FileBlobStore(settings.data_dir, settings.blob_container)


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
