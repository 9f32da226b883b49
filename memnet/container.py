"""The services one process runs, as the composition root (:mod:`memnet.bootstrap`)
wires them. The API's handlers receive them in their request context
(:class:`memnet.api.endpoint.RequestContext`) rather than looking them up."""

from __future__ import annotations

from dataclasses import dataclass

from memnet.ports import Authenticator, BlobStore, MessageQueue, SearchIndex
from memnet.services.audit import AuditLog
from memnet.services.compaction import CompactionService
from memnet.services.context import ContextService
from memnet.services.documents import DocumentService
from memnet.services.events import EventService
from memnet.services.forget import ForgetService
from memnet.services.forget_conversation import ForgetConversation
from memnet.services.holds import LegalHolds
from memnet.services.listing import DocumentListing
from memnet.services.proposal_review import ProposalReview
from memnet.services.quotas import Quotas
from memnet.services.registry import ProfileRegistry
from memnet.services.replay import ReplayService
from memnet.services.retention import RetentionService
from memnet.services.snapshots import SnapshotService
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
