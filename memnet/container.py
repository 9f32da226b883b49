"""The services one process runs, as the composition root (:mod:`memnet.bootstrap`)
wires them. The API's handlers receive them in their request context
(:class:`memnet.api.endpoint.RequestContext`) rather than looking them up."""

from __future__ import annotations

from dataclasses import dataclass

from memnet.ports import Authenticator, BlobStore, MessageQueue, SearchIndex
from memnet.services.compaction.service import CompactionService
from memnet.services.context.assembly import ContextService
from memnet.services.documents.audit import AuditLog
from memnet.services.documents.listing import DocumentListing
from memnet.services.documents.revert import Reverts
from memnet.services.documents.service import DocumentService
from memnet.services.events.paging import EventPaging
from memnet.services.events.service import EventService
from memnet.services.exports.service import ExportService
from memnet.services.forget.conversation import ForgetConversation
from memnet.services.forget.user import ForgetService
from memnet.services.governance.holds import LegalHolds
from memnet.services.governance.quotas import Quotas
from memnet.services.governance.retention import RetentionService
from memnet.services.profiles.registry import ProfileRegistry
from memnet.services.proposals.review import ProposalReview
from memnet.services.replay.listing import SnapshotListing
from memnet.services.replay.snapshots import SnapshotService
from memnet.services.replay.worker import ReplayService
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
    reverts: Reverts
    event_paging: EventPaging  # issue 27: listing what exists
    snapshot_listing: SnapshotListing
    exports: ExportService
