"""Blob names (spec 7.2, docs/operations.md "Storage layout"), in one place."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

SHARED_OWNER = "_tenant"  # the "user" a tenant's shared documents live under: no real
# user id can be it (identifiers never start with "_"), so nothing of a user reaches it


def user_prefix(tenant_id: str, user_id: str) -> str:
    return f"tenants/{tenant_id}/users/{user_id}/"


@dataclass(frozen=True)
class DocumentRef:
    """A document's address: tenant, user, namespace and namespace-relative path."""

    tenant_id: str
    user_id: str
    namespace: str
    path: str

    @property
    def blob_name(self) -> str:
        return f"{user_prefix(self.tenant_id, self.user_id)}documents/{self.namespace}/{self.path}"

    def audit_name(self, change_id: str) -> str:
        return audit_name(self.tenant_id, self.user_id, change_id)

    def shared(self) -> DocumentRef:
        """The tenant's shared document at this namespace and path (docs/profiles.md)."""
        return DocumentRef(self.tenant_id, SHARED_OWNER, self.namespace, self.path)

    def as_json(self) -> dict[str, str]:
        return {
            "tenant_id": self.tenant_id,
            "user_id": self.user_id,
            "namespace": self.namespace,
            "path": self.path,
        }


def audit_name(tenant_id: str, user_id: str, change_id: str) -> str:
    return f"{user_prefix(tenant_id, user_id)}audit/{change_id}.json"


def tenant_policy_name(tenant_id: str) -> str:
    """A tenant's legal holds (docs/operations.md "Storage layout"), outside every user's prefix."""
    return f"tenants/{tenant_id}/_policy.json"


def governance_prefix(tenant_id: str) -> str:
    """Where a tenant's governance records live: outside every user's prefix, so that
    forgetting a user leaves its job, receipt and log (identifiers cannot start with _)."""
    return f"tenants/{tenant_id}/_governance/"


def forget_job_name(tenant_id: str, user_id: str) -> str:
    """A forget job's state; while it runs, also the tombstone that refuses writes."""
    return f"{governance_prefix(tenant_id)}forget/{user_id}.json"


def receipt_name(tenant_id: str, receipt_id: str) -> str:
    return f"{governance_prefix(tenant_id)}receipts/{receipt_id}.json"


def receipt_manifest_name(tenant_id: str, receipt_id: str, seq: int) -> str:
    """One manifest blob of a receipt: the sha256 of each name one batch deleted."""
    return f"{governance_prefix(tenant_id)}receipts/{receipt_id}/manifest/{seq:06d}.json"


def forget_conversation_job_name(tenant_id: str, user_id: str, conversation_id: str) -> str:
    """A forget-conversation job's state (not a tombstone: the user may keep writing)."""
    return f"{governance_prefix(tenant_id)}forget/{user_id}/conversations/{conversation_id}.json"


def governance_log_name(tenant_id: str, entry_id: str) -> str:
    """One governance log entry (holds set and cleared, forgets asked and done)."""
    return f"{governance_prefix(tenant_id)}log/{entry_id}.json"


def import_ledger_name(tenant_id: str, user_id: str) -> str:
    """An import's ledger (issue 27): which archive is imported into the user and which
    of its parts are done; outside the user's prefix, so that it says whether the
    user's memory is the import's own (a resumption) or someone else's."""
    return f"{governance_prefix(tenant_id)}imports/{user_id}.json"


def sweep_state_name(job: str) -> str:
    """A container-wide job's persisted cursor and lease (retention sweep, compaction scan)."""
    return f"_governance/jobs/{job}.json"


def vector_model_name() -> str:
    """The embedding model the search index's vectors were last asked of (issue 16): a
    worker that finds another one configured queues the re-embedding of everything."""
    return "_search/vector_model.json"


def audit_horizon_name(tenant_id: str, user_id: str) -> str:
    """Audit records of the user minted before the time this names were removed by
    retention: a document's history ends there instead of being broken."""
    return f"{user_prefix(tenant_id, user_id)}audit_horizon.json"


def idempotency_name(tenant_id: str, user_id: str, key_hash: str) -> str:
    return f"{user_prefix(tenant_id, user_id)}idempotency/{key_hash}.json"


@dataclass(frozen=True)
class SnapshotRef:
    """A conversation snapshot's address (spec 7.2) and the names derived from it."""

    tenant_id: str
    user_id: str
    conversation_id: str
    snapshot_id: str

    @property
    def blob_name(self) -> str:
        prefix = user_prefix(self.tenant_id, self.user_id)
        return f"{prefix}snapshots/{self.conversation_id}/{self.snapshot_id}.json"

    @property
    def replay_name(self) -> str:
        """The replay record: the replay's status, its plan and what it wrote."""
        prefix = user_prefix(self.tenant_id, self.user_id)
        return f"{prefix}replays/{self.conversation_id}/{self.snapshot_id}.json"

    @property
    def uri(self) -> str:
        """The pointer events and evidence carry (spec 9.2): ``blob://`` and the name."""
        return f"blob://{self.blob_name}"

    @property
    def replay_id(self) -> str:
        """Derived from the address, so every path to one snapshot names one replay."""
        digest = hashlib.sha256(self.blob_name.encode()).hexdigest()
        return f"rpl_{digest[:24]}"

    def as_json(self) -> dict[str, str]:
        return {
            "tenant_id": self.tenant_id,
            "user_id": self.user_id,
            "conversation_id": self.conversation_id,
            "snapshot_id": self.snapshot_id,
        }

    @classmethod
    def of_blob(cls, name: str) -> SnapshotRef | None:
        """The snapshot a blob name (container-relative) addresses, if it is one."""
        parts = name.split("/")
        if len(parts) != 7 or parts[0] != "tenants" or parts[2] != "users":
            return None
        if parts[4] != "snapshots" or not parts[6].endswith(".json"):
            return None
        return cls(parts[1], parts[3], parts[5], parts[6].removesuffix(".json"))


def export_prefix(tenant_id: str, user_id: str) -> str:
    """A user's exports (issue 27; docs/export.md): under the tenant's governance prefix,
    beside forget jobs and receipts, so that no listing of the user's own data meets an
    archive of it; a forget of the user deletes them (kind ``exports``)."""
    return f"{governance_prefix(tenant_id)}exports/{user_id}/"


def export_job_name(tenant_id: str, user_id: str, export_id: str) -> str:
    """An export's state: who asked, its status and progress, when it expires."""
    return f"{export_prefix(tenant_id, user_id)}{export_id}/job.json"


def export_file_name(tenant_id: str, user_id: str, export_id: str, name: str) -> str:
    """One file of an export's archive (``manifest.json``, a part, ``memory.md``)."""
    return f"{export_prefix(tenant_id, user_id)}{export_id}/files/{name}"
