"""The composition root: wires adapters to services from :class:`Settings`.

Built lazily, once per process, on first use (nothing happens at import). Tests build
their own :class:`Services` with :func:`build` and install them with :func:`install`.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from datetime import timedelta

from memnet import callers, telemetry
from memnet.adapters.clock import SystemClock
from memnet.container import Services as Services  # re-exported: what build returns
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
)
from memnet.services.audit import AuditLog
from memnet.services.compaction import CompactionService, CompactionTrigger
from memnet.services.context import ContextService
from memnet.services.documents import DocumentService
from memnet.services.event_classes import EventClasses
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
from memnet.services.registry import ProfileRegistry, load_registry
from memnet.services.replay import ReplayService
from memnet.services.replay_records import ReplayRecords
from memnet.services.retention import RetentionService, retention_policy
from memnet.services.snapshots import SnapshotService
from memnet.services.tombstones import Tombstones
from memnet.settings import Settings
from memnet.wiring import (
    blob_store,
    event_vectors,
    key_provider,
    make_embedder,
    make_extractor,
    message_queue,
    search_index,
)


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
    semantic = embedder if embedder is not None else make_embedder(settings)
    events = EventService(
        blobs,
        index,
        queue,
        idempotency,
        clock,
        classes=EventClasses(registry),
        tombstones=tombstones,
        after_index=promotion.after_indexing if promotion.configured else None,
        promote_delay=settings.promote_delay_seconds,
        vectors=(
            event_vectors(index, embedder)  # a given embedder answers searches too
            if embedder is not None
            else event_vectors(index, semantic, settings)
        ),
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
        semantic,
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
            settings.job_max_seconds,
            settings.sweep_page_size,
            settings.forget_grace_seconds,
            settings.blob_soft_delete_days,
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
        settings.quota_batch_max,
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


@dataclass(frozen=True)
class StartupFailure:
    """Why the services could not be built, as ``GET /v1/health/details`` reports it:
    a configuration error names its file or setting, the field and the problem (never a
    secret: settings name secrets, they do not print them); any other failure (a vault
    or storage that refused) only its kind, whose details are in the log."""

    source: str
    field: str
    problem: str

    @classmethod
    def of(cls, error: Exception) -> StartupFailure:
        if isinstance(error, ConfigError):
            return cls(error.source, error.field, error.problem)
        return cls("dependency", type(error).__name__, "see the log")

    def details(self) -> dict[str, str]:
        return {"source": self.source, "field": self.field, "problem": self.problem}


_lock = threading.Lock()
_services: Services | None = None
_failed_at: float | None = None
_failure: StartupFailure | None = None
RETRY_BUILD_SECONDS = 30.0
log = logging.getLogger("memnet.bootstrap")


def services() -> Services:
    """The process-wide services, built from the environment on first call.

    A build that fails (a broken setting, a vault that refuses or cannot be reached) is
    logged once and answered with 503 ``NOT_READY``; the build is tried again at most
    every :data:`RETRY_BUILD_SECONDS`, so requests do not queue behind credential
    timeouts, and the health probe reports the instance as not ready meanwhile."""
    global _services, _failed_at, _failure
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
            _failed_at, _failure = time.monotonic(), StartupFailure.of(exc)
            log.error("mem.net could not start: %s", exc, exc_info=not isinstance(exc, ConfigError))
            raise _not_ready() from exc
        _failed_at, _failure = None, None
        return _services


def startup_failure() -> StartupFailure | None:
    """Why the last build failed, while the services are not built; else None."""
    with _lock:
        return None if _services is not None else _failure


def services_or_cause() -> Services:
    """:func:`services`, whose ``NOT_READY`` names the startup failure as
    ``details.cause``: what ``GET /v1/health/details`` answers while the app cannot start
    (the cause holds no secret; every other route answers without it)."""
    try:
        return services()
    except Unavailable as error:
        failure = startup_failure()
        if failure is None:
            raise
        raise Unavailable(
            error.message, code=error.code, retry_after=error.retry_after, cause=failure.details()
        ) from error


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
    global _services, _failed_at, _failure
    with _lock:
        _services, _failed_at, _failure = replacement, None, None
