"""Which adapter each setting selects (:mod:`memnet.bootstrap` wires them to the
services). Adapters are imported only when chosen, so the core never imports the Azure
SDKs for an embedded deployment (``function_app``'s blob-trigger binding package does:
docs/decisions.md) and a cold start imports what it uses."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memnet.domain.errors import ConfigError
from memnet.ports import (
    BlobStore,
    Embedder,
    Extractor,
    KeyProvider,
    MessageQueue,
    SearchIndex,
    VectorIndex,
)
from memnet.services.profiles.registry import SchemaKey
from memnet.services.search.vectors import QUERY_DEADLINE_SECONDS, EventVectors
from memnet.settings import Settings


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
    if settings.storage == "memory":
        from memnet.adapters.memory.blobstore import MemoryBlobStore

        return MemoryBlobStore()
    from memnet.adapters.local.blobstore import FileBlobStore

    return FileBlobStore(settings.data_dir, settings.blob_container, fsync=settings.local_fsync)


def message_queue(settings: Settings) -> MessageQueue:
    """Azure Storage Queues beside Azure Blob, memory beside memory; else a SQLite file in
    the data directory."""
    if settings.storage == "azure":
        from memnet.adapters.azure.queue import AzureStorageQueue

        if settings.queue_connection_string:
            return AzureStorageQueue.from_connection_string(settings.queue_connection_string)
        assert settings.queue_account_url is not None  # Settings.check guarantees one
        return AzureStorageQueue.from_account_url(settings.queue_account_url)
    if settings.storage == "memory":
        from memnet.adapters.memory.queue import MemoryQueue

        return MemoryQueue()
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


QUERY_EMBED_SECONDS = QUERY_DEADLINE_SECONDS  # per request too: a search tries once


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
