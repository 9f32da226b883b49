"""Blob names (spec 7.2, ARCHITECTURE.md section 2), in one place."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass


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

    def as_json(self) -> dict[str, str]:
        return {
            "tenant_id": self.tenant_id,
            "user_id": self.user_id,
            "namespace": self.namespace,
            "path": self.path,
        }


def audit_name(tenant_id: str, user_id: str, change_id: str) -> str:
    return f"{user_prefix(tenant_id, user_id)}audit/{change_id}.json"


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
