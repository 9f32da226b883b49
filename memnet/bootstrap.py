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

from memnet import auth_wiring, telemetry_setup
from memnet.adapters.clock import SystemClock
from memnet.container import Services as Services  # re-exported: what build returns
from memnet.domain.errors import ConfigError, Unavailable
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
from memnet.services.compaction.service import CompactionService, CompactionTrigger
from memnet.services.context.assembly import ContextService
from memnet.services.documents.audit import AuditLog
from memnet.services.documents.expiry import DocumentExpiry, shortest_ttl
from memnet.services.documents.idempotency import IdempotencyStore
from memnet.services.documents.listing import DocumentListing
from memnet.services.documents.revert import Reverts
from memnet.services.documents.service import DocumentService
from memnet.services.events.classes import EventClasses
from memnet.services.events.paging import EventPaging
from memnet.services.events.promotion import Promotion
from memnet.services.events.service import EventService
from memnet.services.exports.archive import Sources
from memnet.services.exports.service import ExportService
from memnet.services.forget.conversation import ForgetConversation
from memnet.services.forget.ledger import JobSettings
from memnet.services.forget.tombstones import Tombstones
from memnet.services.forget.user import ForgetService
from memnet.services.governance.holds import LegalHolds
from memnet.services.governance.quotas import QuotaLimits, Quotas
from memnet.services.governance.retention import RetentionService, retention_policy
from memnet.services.profiles.registry import ProfileRegistry, load_registry
from memnet.services.proposals.review import ProposalReview
from memnet.services.replay.listing import SnapshotListing
from memnet.services.replay.records import ReplayRecords
from memnet.services.replay.snapshots import SnapshotService
from memnet.services.replay.worker import ReplayService
from memnet.services.transfer.import_writes import RecordWrites
from memnet.services.transfer.importer import Importer
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

TOMBSTONE_MISS_SECONDS = 5.0  # most a forget tombstone's miss is remembered (tombstones.py)


@dataclass(frozen=True)
class _Parts:
    """What the capabilities are built from: the adapters and the stores they share."""

    settings: Settings
    clock: Clock
    blobs: BlobStore
    registry: ProfileRegistry
    queue: MessageQueue
    authenticator: Authenticator
    index: SearchIndex
    audit: AuditLog
    idempotency: IdempotencyStore
    tombstones: Tombstones


def build(
    settings: Settings,
    *,
    blobs: BlobStore | None = None,
    authenticator: Authenticator | None = None,
    clock: Clock | None = None,
    queue: MessageQueue | None = None,
    index: SearchIndex | None = None,
    keys: KeyProvider | None = None,
    extractor: Extractor | None = None,
    embedder: Embedder | None = None,
) -> Services:
    """Wire everything; an adapter given here replaces the configured one (tests)."""
    parts = _parts(settings, clock or SystemClock(), blobs, queue, authenticator, index)
    return _wire(parts, keys, extractor, embedder)


def _wire(
    parts: _Parts,
    keys: KeyProvider | None,
    extractor: Extractor | None,
    embedder: Embedder | None,
) -> Services:
    """Each capability from the parts, in the order their settings and files are checked."""
    documents = _documents(parts)
    semantic = embedder if embedder is not None else make_embedder(parts.settings)
    events = _events(parts, documents, semantic, given=embedder is not None)
    snapshots, replay = _replay(parts, documents, events, keys, extractor, semantic)
    holds = LegalHolds(parts.blobs, parts.clock)
    quotas = Quotas(parts.blobs, parts.clock, quota_limits(parts.settings))
    listing = DocumentListing(parts.blobs, parts.registry, parts.clock)
    forget = _forget(parts, holds, quotas)
    return Services(
        settings=parts.settings,
        blobs=parts.blobs,
        registry=parts.registry,
        authenticator=parts.authenticator,
        documents=documents,
        audit=parts.audit,
        context=_context(parts, documents),
        events=events,
        queue=parts.queue,
        index=parts.index,
        snapshots=snapshots,
        replay=replay,
        holds=holds,
        forget=forget,
        forget_conversation=_forget_conversation(parts, forget, documents, holds),
        retention=_retention(parts),
        compaction=_compaction(parts, documents, events),
        quotas=quotas,
        listing=listing,
        proposals=ProposalReview(documents, listing, parts.registry, parts.audit, parts.clock),
        reverts=Reverts(documents, parts.audit, parts.registry, parts.tombstones),
        event_paging=EventPaging(parts.blobs, EventClasses(parts.registry)),
        snapshot_listing=SnapshotListing(parts.blobs, ReplayRecords(parts.blobs, parts.clock)),
        exports=_exports(parts, snapshots, holds, listing, documents),
    )


def _exports(
    parts: _Parts,
    snapshots: SnapshotService,
    holds: LegalHolds,
    listing: DocumentListing,
    documents: DocumentService,
) -> ExportService:
    proposals = ProposalReview(documents, listing, parts.registry, parts.audit, parts.clock)
    sources = Sources(
        parts.blobs,
        parts.audit,
        EventClasses(parts.registry),
        proposals,
        snapshots,
        parts.registry.profile_ids,
    )
    return ExportService(
        sources=sources,
        registry=parts.registry,
        queue=parts.queue,
        holds=holds,
        tombstones=parts.tombstones,
        clock=parts.clock,
    )


def _parts(
    settings: Settings,
    clock: Clock,
    blobs: BlobStore | None,
    queue: MessageQueue | None,
    authenticator: Authenticator | None,
    index: SearchIndex | None,
) -> _Parts:
    """Storage, profiles, queue, callers and search index, in that order (a broken one
    stops startup before the next is opened), and the stores every service shares."""
    blobs = blobs or blob_store(settings)
    registry = load_registry(settings.profiles_dir)
    queue = queue or message_queue(settings)
    authenticator = authenticator or auth_wiring.authenticator(settings, registry)
    idempotency = IdempotencyStore(
        blobs,
        clock,
        ttl=timedelta(seconds=settings.idempotency_ttl_seconds),
        lease=timedelta(seconds=settings.idempotency_lease_seconds),
    )
    tombstones = Tombstones(
        blobs,
        clock,
        settings.forget_quiet_seconds,
        settings.forget_grace_seconds,
        cache_seconds=min(TOMBSTONE_MISS_SECONDS, settings.forget_grace_seconds / 4),
    )
    return _Parts(
        settings=settings,
        clock=clock,
        blobs=blobs,
        registry=registry,
        queue=queue,
        authenticator=authenticator,
        index=index or search_index(settings),
        audit=AuditLog(blobs),
        idempotency=idempotency,
        tombstones=tombstones,
    )


def _documents(parts: _Parts) -> DocumentService:
    return DocumentService(
        blobs=parts.blobs,
        registry=parts.registry,
        audit=parts.audit,
        idempotency=parts.idempotency,
        clock=parts.clock,
        tombstones=parts.tombstones,
        # A write that crosses its targets queues a compaction.
        after_commit=CompactionTrigger(parts.queue),
    )


def _context(parts: _Parts, documents: DocumentService) -> ContextService:
    settings = parts.settings
    return ContextService(
        parts.blobs,
        parts.registry,
        origins=documents.origins,
        index_ttl=settings.context_index_ttl_seconds,
        semantic_ttl=settings.context_semantic_ttl_seconds,
        read_workers=settings.context_read_workers,
        clock=parts.clock,
    )


def _events(
    parts: _Parts, documents: DocumentService, embedder: Embedder | None, *, given: bool
) -> EventService:
    """Events and their search; a ``given`` embedder answers searches too, a configured
    one gets its own instance for them (:func:`memnet.wiring.event_vectors`)."""
    settings, index = parts.settings, parts.index
    promotion = Promotion(documents, parts.blobs, index, parts.registry, parts.clock)
    return EventService(
        parts.blobs,
        index,
        parts.queue,
        parts.idempotency,
        parts.clock,
        classes=EventClasses(parts.registry),
        tombstones=parts.tombstones,
        after_index=promotion.after_indexing if promotion.configured else None,
        promote_delay=settings.promote_delay_seconds,
        vectors=(
            event_vectors(index, embedder) if given else event_vectors(index, embedder, settings)
        ),
        dense_weight=settings.search_dense_weight,
    )


def _replay(
    parts: _Parts,
    documents: DocumentService,
    events: EventService,
    keys: KeyProvider | None,
    extractor: Extractor | None,
    embedder: Embedder | None,
) -> tuple[SnapshotService, ReplayService]:
    """Snapshots (encrypted under ``keys``) and their replay through ``extractor``."""
    settings, registry = parts.settings, parts.registry
    records = ReplayRecords(parts.blobs, parts.clock)
    snapshots = SnapshotService(
        blobs=parts.blobs,
        keys=keys or key_provider(settings),
        queue=parts.queue,
        records=records,
        registry=registry,
        tombstones=parts.tombstones,
    )
    replay = ReplayService(
        snapshots=snapshots,
        records=records,
        registry=registry,
        documents=documents,
        events=events,
        extractor=extractor or make_extractor(settings, registry.schemas()),
        queue=parts.queue,
        clock=parts.clock,
        retry_base_seconds=settings.replay_retry_base_seconds,
        retry_limit=settings.replay_retry_limit,
        embedder=embedder,
    )
    return snapshots, replay


def _forget(parts: _Parts, holds: LegalHolds, quotas: Quotas) -> ForgetService:
    settings = parts.settings
    jobs = JobSettings(
        job_max_seconds=settings.job_max_seconds,
        page_size=settings.sweep_page_size,
        grace_seconds=settings.forget_grace_seconds,
        soft_delete_days=settings.blob_soft_delete_days,
    )
    return ForgetService(
        blobs=parts.blobs,
        index=parts.index,
        queue=parts.queue,
        holds=holds,
        clock=parts.clock,
        settings=jobs,
        tombstones=parts.tombstones,
        forget_counters=quotas.forget_user,
    )


def _forget_conversation(
    parts: _Parts, forget: ForgetService, documents: DocumentService, holds: LegalHolds
) -> ForgetConversation:
    return ForgetConversation(
        forget=forget,
        documents=documents,
        registry=parts.registry,
        blobs=parts.blobs,
        index=parts.index,
        queue=parts.queue,
        holds=holds,
        clock=parts.clock,
    )


def _retention(parts: _Parts) -> RetentionService:
    """The sweep, its policy checked now: a bad retention file stops startup."""
    settings, blobs, clock = parts.settings, parts.blobs, parts.clock
    policy = retention_policy(parts.registry, settings.retention_file, settings.audit_floor_days)
    idempotency = (
        timedelta(seconds=settings.idempotency_ttl_seconds),
        timedelta(seconds=settings.idempotency_lease_seconds),
    )
    return RetentionService(
        blobs=blobs,
        clock=clock,
        index=parts.index,
        audit=parts.audit,
        policy=policy,
        idempotency=idempotency,
        page_size=settings.sweep_page_size,
        max_seconds=settings.job_max_seconds,
        tombstones=parts.tombstones,
        expiry=DocumentExpiry(blobs, clock, shortest_ttl(parts.registry)),
    )


def _compaction(
    parts: _Parts, documents: DocumentService, events: EventService
) -> CompactionService:
    return CompactionService(
        documents=documents,
        events=events,
        registry=parts.registry,
        audit=parts.audit,
        blobs=parts.blobs,
        index=parts.index,
        queue=parts.queue,
        clock=parts.clock,
        page_size=parts.settings.sweep_page_size,
        max_seconds=parts.settings.job_max_seconds,
    )


def quota_limits(settings: Settings) -> QuotaLimits:
    return QuotaLimits(
        user_requests=settings.quota_user_requests,
        user_writes=settings.quota_user_writes,
        service_requests=settings.quota_service_requests,
        service_writes=settings.quota_service_writes,
        window_seconds=settings.quota_window_seconds,
        batch_max=settings.quota_batch_max,
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
            settings = auth_wiring.with_vault_secrets(Settings.from_env())
            telemetry_setup.configure(settings)  # once per process; a no-op when "none"
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
    built = build(auth_wiring.with_vault_secrets(Settings.from_env()))
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


def importer(services: Services, clock: Clock | None = None) -> Importer:
    """The import of an export archive (issue 27) over built services: an operator's
    command, not a request's, so not a member of :class:`Services`."""
    settings, clock = services.settings, clock or SystemClock()
    writes = RecordWrites(
        services.blobs, services.audit, services.events, services.holds, services.snapshots
    )
    tombstones = Tombstones(services.blobs, clock, settings.forget_quiet_seconds)
    return Importer(writes, tombstones, clock)
