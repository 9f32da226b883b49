"""Blob names (spec 7.2, ARCHITECTURE.md section 2), in one place."""

from __future__ import annotations

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
