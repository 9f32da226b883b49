"""Response bodies of the HTTP routes, for the OpenAPI document and for tests.

The handlers do not build responses through these models (a document GET renders its
stored bytes as they are; building a model per response would cost time on the hot
paths): ``tests/api/test_models_responses.py`` checks that real responses validate.
Records the service stores and may grow (document envelopes, audit records, replay and
forget records, receipts) are open: the members listed are those always present.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel

from memnet.api.models.requests import HoldKind, PatchOp


class Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class Open(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)


# -- errors (spec 10.7) ---------------------------------------------------------------------


class ErrorDetail(Closed):
    code: str = Field(description="What went wrong, e.g. ETAG_MISMATCH (docs/api.md).")
    message: str
    request_id: str = Field(description="Also in the x-request-id header and the log.")
    details: dict[str, Any] = Field(
        description="Data of the error: e.g. field, location (a list: 'body' then member "
        "names and array indexes), latest_etag, violations."
    )


class ErrorResponse(Closed):
    error: ErrorDetail


# -- health -----------------------------------------------------------------------------------


class Health(Closed):
    status: Literal["ok"]


class EmbedderHealth(Closed):
    """``{"kind": "none"}``, or the embedder and whether one call to it succeeded
    (``reachable`` null while the first check runs; docs/search.md, "Health")."""

    kind: str
    model: str | None = None
    describe: str | None = None
    reachable: bool | None = None
    checked_at: str | None = None
    error: str | None = None


class HealthDetails(Closed):
    status: Literal["ok"]
    storage: str
    queue: str
    search: str
    auth: str
    quotas: str
    profiles: list[str]
    embedder: EmbedderHealth


# -- the caller and its profiles (issue 28) ----------------------------------------------------


class Me(Closed):
    """``GET /v1/me``: the caller's own grant, nothing about another caller."""

    caller_id: str
    roles: list[str] = Field(description="Sorted.")
    tenants: list[str] = Field(description="Sorted; ['*']: any tenant.")
    profiles: list[str] = Field(
        description="The loaded profiles this caller may use, sorted (a grant of '*': every one)."
    )
    user_id: str | None = Field(description="The one user a user's own (delegated) token acts for.")
    clearance: str | None = Field(description="The caller's sensitivity class, if it names one.")


class ProfileRead(Closed):
    """``GET /v1/profiles/{profile_id}``: the profile as configured (docs/profiles.md)
    and, by schema id then version, the JSON Schemas its bindings name."""

    profile_id: str
    profile: dict[str, Any]
    schemas: dict[str, dict[str, dict[str, Any]]]


# -- documents --------------------------------------------------------------------------------


class Envelope(Open):
    """A document (spec 9.1)."""

    doc_id: str
    content: dict[str, Any]
    expires_at: str | None = Field(
        None,
        description="A short-lived document's expiry: its binding's ttl_seconds after "
        "its last write; from then on it reads as absent.",
    )


class DocumentRead(Closed):
    etag: str
    document: Envelope


# -- versions (issue 27) ----------------------------------------------------------------

CHANGE_ID_PATTERN = "^chg_[0-9a-f]{28}$"


class DocumentVersion(Closed):
    """``GET {document}?as_of=``: the document as it was after ``change_id``."""

    change_id: str = Field(pattern=CHANGE_ID_PATTERN)
    latest_etag: str = Field(description="The current version's ETag (for If-Match).")
    document: Envelope


class DocumentReadOrVersion(RootModel[DocumentRead | DocumentVersion]):
    """A document read: the current version, or with ``as_of`` a past one."""


class DocumentDiff(Closed):
    """``GET {document}:diff``: the ops over ``content`` that turn version ``from`` into
    version ``to``, paths as a PATCH writes them (``/content/...``)."""

    from_: str = Field(alias="from", pattern=CHANGE_ID_PATTERN)
    to: str = Field(pattern=CHANGE_ID_PATTERN)
    ops: list[PatchOp]


class RedirectedOp(Open):
    op_index: int
    from_path: str
    to_path: str
    reason: str


class Upserted(Closed):
    """What an append into a section with an item identity became."""

    op_index: int
    result: Literal["added", "replaced", "unchanged"]
    path: str


class DocumentWrite(Closed):
    """``document`` is absent for a caller without the ``read`` role."""

    etag: str
    document: Envelope | None = None
    redirected_ops: list[RedirectedOp] | None = None
    upserts: list[Upserted] | None = Field(
        None,
        description="Appends into a section with an item identity (profile "
        "item_identity): added, or replaced/unchanged where the section held the item.",
    )
    unchanged: bool | None = None
    rebased_from: str | None = None


class AuditRecord(Open):
    change_id: str
    operation: Literal["create", "patch", "replace"]


class HistoryPage(Closed):
    etag: str
    changes: list[AuditRecord]
    next_before: str | None
    truncated: bool | None = None


class WhyChange(Closed):
    """A change that produced the value (``GET {document}:why``; docs/api.md)."""

    change_id: str
    role: Literal["origin", "modified", "upserted", "moved", "copied"]
    path: str = Field(description="Where the value was just after this change.")
    actor: str
    timestamp: str
    reason: str
    confidence: float | None
    evidence: Any = Field(None, description="Absent for a shared document, unless admin.")
    origin: dict[str, Any] | None = Field(
        None, description="Who produced the ops: a replay (replay_id, extractor), a review."
    )
    ops: list[dict[str, Any]] = Field(
        description="This change's ops that touched the value, each with its index."
    )


class WhyMore(Closed):
    as_of: str = Field(
        description="The version to ask about next: the change before the walk's last."
    )
    path: str = Field(description="Where the value was in that version.")


class WhyAnswer(Closed):
    path: str = Field(description="The value's path in the content, indexes canonical.")
    change_id: str
    etag: str
    value: Any
    changes: list[WhyChange] = Field(description="Newest first; the last is the origin.")
    truncated: bool
    truncated_by: Literal["HISTORY_TRUNCATED", "HISTORY_FORGOTTEN", "WALK_LIMIT"] | None
    more: WhyMore | None = Field(description="After WALK_LIMIT: ?as_of=&path= to go on.")


class ListedDocument(Closed):
    path: str
    etag: str
    updated_at: str
    binding_id: str | None


class DocumentList(Closed):
    """``GET …/documents/{namespace}/``: one page, in path order."""

    documents: list[ListedDocument]
    continuation: str | None = Field(description="Pass as ?continuation= for the next page.")


# -- proposals --------------------------------------------------------------------------------


class QueuedProposal(Closed):
    proposal_id: str
    status: Literal["pending", "expired"]
    namespace: str
    path: str
    binding_id: str
    index: int = Field(description="Its place in the pending section, at etag.")
    expires_at: str | None
    etag: str = Field(description="The document's version the proposal was read from.")
    item: dict[str, Any] = Field(description="The pending item: candidate, target_path, ...")


class ProposalQueue(Closed):
    proposals: list[QueuedProposal]
    more: bool = Field(description="A namespace held more documents than were read.")


class ProposalDecision(Open):
    proposal_id: str
    status: Literal["approved", "edited", "rejected"]
    reviewed_by: str
    reviewed_at: str
    etag: str | None = None
    document: Envelope | None = None
    replayed: bool | None = None


# -- context ----------------------------------------------------------------------------------


class AssembledDocument(Open):
    binding_id: str
    namespace: str
    path: str
    etag: str
    document: Envelope


class DroppedBinding(Open):
    binding_id: str
    reason: str


class PendingShown(Closed):
    """A returned document's pending section, as assembly showed it (docs/context.md)."""

    binding_id: str
    path: str
    section: str
    items: int
    shown: Literal["omitted", "marked"]


class ItemsOrigins(Closed):
    """``provenance: true``: a kept document's array items and the change each came
    from (``change_id``, ``actor``, ``timestamp``, ``reason``, ``confidence``,
    ``evidence``, ``origin``; only ``truncated_by`` when that is older than the walk)."""

    binding_id: str
    path: str
    items: dict[str, dict[str, Any]] | None = Field(description="By item path in the content.")
    omitted: Literal["CLEARANCE_REQUIRED", "VERSION_NOT_STORED"] | None = None


class Assembled(Open):
    selected_project_id: str | None
    documents: list[AssembledDocument]
    dropped_bindings: list[DroppedBinding]
    pending_sections: list[PendingShown] | None = None
    provenance: list[ItemsOrigins] | None = None


# -- events -----------------------------------------------------------------------------------


class EventRecord(Open):
    event_id: str
    tenant_id: str
    user_id: str
    service_id: str
    timestamp: str
    source_type: str
    digest: str
    keywords: list[str]
    project_ids: list[str]
    recorded_by: str
    sensitivity: dict[str, str] | None = Field(
        None, description="{profile_id, class}: shown only to callers cleared for it."
    )


class EventWritten(Closed):
    event: EventRecord
    indexed: bool


class RankingParts(Closed):
    relevance: float
    importance: float
    recency: float


class SearchHit(Closed):
    event: EventRecord
    score: float
    pointers: dict[str, Any]
    ranking: RankingParts | None = Field(
        None, description="With a ranking blend: its parts, each 0-1; score is the blend."
    )


class SearchResults(Closed):
    results: list[SearchHit]
    count: int


class ReindexQueued(Closed):
    events: int
    stale_entries: int
    messages: int


# -- snapshots and replay ---------------------------------------------------------------------


class ReplayStatus(Open):
    """An uploader without the ``read`` role gets these three members only."""

    replay_id: str
    status: str
    status_url: str


class UnresolvedReplays(Closed):
    replays: list[ReplayStatus]
    count: int


class EventList(Closed):
    events: list[EventRecord]
    after: str | None = Field(description="The cursor of the next page; null: the last page.")


class ListedSnapshot(Closed):
    conversation_id: str
    snapshot_id: str
    stored_at: str
    size: int | None
    replay_id: str
    replay_status: str | None


class SnapshotList(Closed):
    snapshots: list[ListedSnapshot]
    after: str | None = Field(description="The cursor of the next page; null: the last page.")


class ExportJob(Closed):
    export_id: str
    tenant_id: str
    user_id: str
    status: str = Field(description="queued, running, done or failed.")
    requested_by: str
    profile_id: str | None
    created_at: str
    updated_at: str
    expires_at: str = Field(description="After it the export is gone (404).")
    progress: dict[str, Any]
    status_url: str
    files_url: str | None = None
    files: list[str] | None = Field(None, description="When done: the archive's files.")
    complete: bool | None = None
    omitted: list[dict[str, str]] | None = None
    error: str | None = None


class ExportDeleted(Closed):
    export_id: str
    deleted: bool


# -- forgetting and holds ---------------------------------------------------------------------


class ForgetAccepted(Closed):
    forget_id: str
    status: str
    status_url: str


class ForgetStatus(Open):
    forget_id: str
    tenant_id: str
    user_id: str
    status: str
    deleted: dict[str, int]


class Receipt(Open):
    receipt_id: str


class Hold(Open):
    hold_id: str
    reason: str
    kinds: list[HoldKind]
    set_by: str
    set_at: str


class Holds(Closed):
    tenant: Hold | None
    users: dict[str, Hold]
