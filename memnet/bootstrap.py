"""The composition root: wires adapters to services from :class:`Settings`.

Built lazily, once per process, on first use (nothing happens at import). Tests build
their own :class:`Services` with :func:`build` and install them with :func:`install`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from memnet import callers, telemetry
from memnet.adapters.clock import SystemClock
from memnet.domain.errors import ConfigError, Unavailable
from memnet.domain.similarity import LexicalSimilarity, Similarity
from memnet.ports import (
    Authenticator,
    BlobStore,
    Clock,
    Embedder,
    Extractor,
    KeyProvider,
    MessageQueue,
    SearchIndex,
    VectorIndex,
)
from memnet.services.audit import AuditLog
from memnet.services.compaction import CompactionService, CompactionTrigger
from memnet.services.context import ContextService
from memnet.services.documents import DocumentService
from memnet.services.event_vectors import EventVectors
from memnet.services.events import EventService
from memnet.services.expiry import DocumentExpiry, shortest_ttl
from memnet.services.forget import ForgetService
from memnet.services.forget_conversation import ForgetConversation
from memnet.services.forget_ledger import JobSettings
from memnet.services.holds import LegalHolds
from memnet.services.idempotency import IdempotencyStore
from memnet.services.listing import DocumentListing
from memnet.services.promotion import Promotion
from memnet.services.proposal_review import ProposalReview
from memnet.services.quotas import QuotaLimits, Quotas
from memnet.services.registry import ProfileRegistry, SchemaKey, load_registry
from memnet.services.replay import ReplayService
from memnet.services.replay_records import ReplayRecords
from memnet.services.retention import RetentionService, retention_policy
from memnet.services.snapshots import SnapshotService
from memnet.services.tombstones import Tombstones
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
    snapshots: SnapshotService
    replay: ReplayService
    holds: LegalHolds
    forget: ForgetService
    forget_conversation: ForgetConversation
    retention: RetentionService
    compaction: CompactionService
    quotas: Quotas
    listing: DocumentListing
    proposals: ProposalReview


def event_vectors(
    index: SearchIndex, embedder: Embedder | None, settings: Settings | None = None
) -> EventVectors | None:
    """Hybrid retrieval when an embedder is configured and the index keeps vectors: the
    embedded index always can; an Azure AI Search index only when built with a vector size
    (its ``vector_dimensions``, None for a lexical index)."""
    if embedder is None:
        return None
    if not isinstance(index, VectorIndex) or getattr(index, "vector_dimensions", 1) is None:
        raise ConfigError(
            "embedder", "search index", f"{index.describe()} keeps no vectors (no vector size)"
        )
    queries = None if settings is None else make_embedder(settings, for_queries=True)
    return EventVectors(index, embedder, queries)


def build(
    settings: Settings,
    *,
    blobs: BlobStore | None = None,
    authenticator: Authenticator | None = None,
    clock: Clock | None = None,
    similarity: Similarity | None = None,
    queue: MessageQueue | None = None,
    index: SearchIndex | None = None,
    keys: KeyProvider | None = None,
    extractor: Extractor | None = None,
    embedder: Embedder | None = None,
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
    tombstones = Tombstones(
        blobs, clock, settings.forget_quiet_seconds, settings.forget_grace_seconds
    )
    queue = queue or message_queue(settings)
    trigger = CompactionTrigger(queue)  # a write that crosses its targets queues a compaction
    documents = DocumentService(blobs, registry, audit, idempotency, clock, tombstones, trigger)
    context = ContextService(
        blobs,
        registry,
        similarity or LexicalSimilarity(),
        index_ttl=settings.context_index_ttl_seconds,
        semantic_ttl=settings.context_semantic_ttl_seconds,
        read_workers=settings.context_read_workers,
        clock=clock,
    )
    auth = authenticator or callers.authenticator(settings, registry)
    index = index or search_index(settings)
    promotion = Promotion(documents, blobs, index, registry, clock)
    events = EventService(
        blobs,
        index,
        queue,
        idempotency,
        clock,
        tombstones=tombstones,
        after_index=promotion.after_indexing if promotion.configured else None,
        promote_delay=settings.promote_delay_seconds,
        vectors=event_vectors(index, embedder or make_embedder(settings), settings),
        dense_weight=settings.search_dense_weight,
    )
    records = ReplayRecords(blobs, clock)
    snapshots = SnapshotService(
        blobs, keys or key_provider(settings), queue, records, registry, tombstones
    )
    replay = ReplayService(
        snapshots,
        records,
        registry,
        documents,
        events,
        extractor or make_extractor(settings, registry.schemas()),
        queue,
        clock,
        settings.replay_retry_base_seconds,
        settings.replay_retry_limit,
    )
    holds = LegalHolds(blobs, clock)
    quotas = Quotas(blobs, clock, quota_limits(settings))
    listing = DocumentListing(blobs, registry, clock)
    forget = ForgetService(
        blobs,
        index,
        queue,
        holds,
        clock,
        JobSettings(
            settings.job_max_seconds, settings.sweep_page_size, settings.forget_grace_seconds
        ),
        quotas.forget_user,
    )
    return Services(
        settings,
        blobs,
        registry,
        auth,
        documents,
        audit,
        context,
        events,
        queue,
        index,
        snapshots,
        replay,
        holds,
        forget,
        ForgetConversation(forget, documents, registry, blobs, index, queue, holds, clock),
        retention=_retention(settings, blobs, clock, index, audit, registry, tombstones),
        compaction=CompactionService(
            documents,
            events,
            registry,
            audit,
            blobs,
            index,
            queue,
            clock,
            settings.sweep_page_size,
            settings.job_max_seconds,
        ),
        quotas=quotas,
        listing=listing,
        proposals=ProposalReview(documents, listing, registry, audit, clock),
    )


def quota_limits(settings: Settings) -> QuotaLimits:
    return QuotaLimits(
        settings.quota_user_requests,
        settings.quota_user_writes,
        settings.quota_service_requests,
        settings.quota_service_writes,
        settings.quota_window_seconds,
    )


def _retention(
    settings: Settings,
    blobs: BlobStore,
    clock: Clock,
    index: SearchIndex,
    audit: AuditLog,
    registry: ProfileRegistry,
    tombstones: Tombstones,
) -> RetentionService:
    """The sweep, its policy checked now: a bad retention file stops startup."""
    policy = retention_policy(registry, settings.retention_file, settings.audit_floor_days)
    idempotency = (
        timedelta(seconds=settings.idempotency_ttl_seconds),
        timedelta(seconds=settings.idempotency_lease_seconds),
    )
    return RetentionService(
        blobs,
        clock,
        index,
        audit,
        policy,
        idempotency,
        settings.sweep_page_size,
        settings.job_max_seconds,
        tombstones,
        DocumentExpiry(blobs, clock, shortest_ttl(registry)),
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
        embeds = settings.embedder != "none"  # the vector field's size: Settings.check
        return AzureSearchIndex.from_settings(
            settings.search_endpoint,
            settings.search_index_name,
            settings.search_api_key,
            vector_dimensions=settings.embedder_dimensions if embeds else None,
        )
    from memnet.adapters.local.search import SqliteSearchIndex

    return SqliteSearchIndex(
        settings.data_dir / "search.sqlite3",
        settings.search_max_postings,
        settings.search_max_vectors,
    )


def key_provider(settings: Settings) -> KeyProvider:
    """Azure Key Vault (managed identity) when configured; else a local key file,
    created on first use."""
    if settings.keys == "azure":
        from memnet.adapters.azure.keyvault import KeyVaultKeys

        assert settings.keyvault_key_id is not None  # Settings.check guarantees it
        return KeyVaultKeys(settings.keyvault_key_id)
    from memnet.adapters.local.keyfile import LocalKeyFile

    return LocalKeyFile(settings.snapshot_key_file)


QUERY_EMBED_SECONDS = 5.0  # a search waits at most this for its text's vector, once


def make_embedder(settings: Settings, for_queries: bool = False) -> Embedder | None:
    """None by default (lexical search only); an OpenAI-compatible or Azure OpenAI
    embeddings model when configured (docs/search.md). ``for_queries``: the instance a
    search uses, with at most :data:`QUERY_EMBED_SECONDS` and no retry (a search then
    answers with words alone rather than wait for a slow model)."""
    if settings.embedder == "none":
        return None
    from memnet.adapters.openai.embedder import for_azure_openai, for_openai_compatible

    timeout = settings.embedder_timeout_seconds
    options: dict[str, Any] = {
        "dimensions": settings.embedder_dimensions,
        "timeout_seconds": min(timeout, QUERY_EMBED_SECONDS) if for_queries else timeout,
        "max_retries": 0 if for_queries else settings.embedder_max_retries,
    }
    assert settings.embedder_model  # Settings.check guarantees it
    if settings.embedder == "openai":
        assert settings.embedder_base_url  # Settings.check guarantees it
        return for_openai_compatible(
            settings.embedder_base_url,
            settings.embedder_api_key or "none",
            settings.embedder_model,
            **options,
        )
    assert settings.embedder_endpoint  # Settings.check guarantees it
    token_provider = None
    if not settings.embedder_api_key:
        from memnet.adapters.azure.identity import openai_token_provider

        token_provider = openai_token_provider()
    return for_azure_openai(
        settings.embedder_endpoint,
        settings.embedder_model,
        settings.embedder_api_version,
        api_key=settings.embedder_api_key,
        token_provider=token_provider,
        **options,
    )


def make_extractor(settings: Settings, schemas: Mapping[SchemaKey, Any] | None = None) -> Extractor:
    """The rule-based extractor by default; an OpenAI-compatible or Azure OpenAI
    chat model when configured (docs/extractors.md)."""
    if settings.extractor == "rules":
        from memnet.adapters.local.rules_extractor import RuleExtractor

        return RuleExtractor()
    from memnet.adapters.openai.extractor import for_azure_openai, for_openai_compatible

    options = {
        "timeout_seconds": settings.extractor_timeout_seconds,
        "max_retries": settings.extractor_max_retries,
        "max_tokens": settings.extractor_max_tokens,
        "max_prompt_chars": settings.extractor_max_prompt_chars,
        "token_parameter": settings.extractor_token_parameter,
        "schemas": schemas,
    }
    if settings.extractor == "openai":
        assert settings.extractor_base_url and settings.extractor_model  # Settings.check
        return for_openai_compatible(
            settings.extractor_base_url,
            settings.extractor_api_key or "none",
            settings.extractor_model,
            **options,
        )
    assert settings.azure_openai_endpoint  # Settings.check guarantees it
    deployment = settings.azure_openai_deployment or settings.extractor_model or ""
    token_provider = None
    if not settings.extractor_api_key:
        from memnet.adapters.azure.identity import openai_token_provider

        token_provider = openai_token_provider()
    return for_azure_openai(
        settings.azure_openai_endpoint,
        deployment,
        settings.azure_openai_api_version,
        api_key=settings.extractor_api_key,
        token_provider=token_provider,
        **options,
    )


_lock = threading.Lock()
_services: Services | None = None
_failed_at: float | None = None
RETRY_BUILD_SECONDS = 30.0
log = logging.getLogger("memnet.bootstrap")


def services() -> Services:
    """The process-wide services, built from the environment on first call.

    A build that fails (a broken setting, a vault that refuses or cannot be reached) is
    logged once and answered with 503 ``NOT_READY``; the build is tried again at most
    every :data:`RETRY_BUILD_SECONDS`, so requests do not queue behind credential
    timeouts, and the health probe reports the instance as not ready meanwhile."""
    global _services, _failed_at
    with _lock:
        if _services is not None:
            return _services
        if _failed_at is not None and time.monotonic() - _failed_at < RETRY_BUILD_SECONDS:
            raise _not_ready()
        try:
            settings = callers.with_vault_secrets(Settings.from_env())
            telemetry.configure(settings)  # once per process; a no-op when "none"
            _services = build(settings)
        except Exception as exc:
            _failed_at = time.monotonic()
            log.error("mem.net could not start: %s", exc, exc_info=not isinstance(exc, ConfigError))
            raise _not_ready() from exc
        _failed_at = None
        return _services


def start() -> Services:
    """Build now and install: for the local host and commands, where a broken setting
    should stop the process with its own error rather than answer 503."""
    built = build(callers.with_vault_secrets(Settings.from_env()))
    install(built)
    return built


def _not_ready() -> Unavailable:
    return Unavailable(
        "The service is not ready: its configuration or a dependency failed at startup "
        "(see the log).",
        code="NOT_READY",
        retry_after=int(RETRY_BUILD_SECONDS),
    )


def install(replacement: Services | None) -> None:
    """Use ``replacement`` from now on (tests); ``None`` rebuilds from settings next time."""
    global _services, _failed_at
    with _lock:
        _services, _failed_at = replacement, None
