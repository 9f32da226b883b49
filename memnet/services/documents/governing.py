"""Which profile governs a stored document, for the jobs that walk the store
(compaction, schema migration): the ``profile_id`` of its head audit record (the change
the document names), else the first profile (by id) with a binding that covers it."""

from __future__ import annotations

from memnet.domain.bindings import Binding
from memnet.domain.document_model import StoredDocument
from memnet.domain.layout import DocumentRef
from memnet.domain.profiles import Profile
from memnet.services.documents.audit import AuditLog
from memnet.services.profiles.registry import ProfileRegistry


def governing(
    audit: AuditLog, registry: ProfileRegistry, ref: DocumentRef, stored: StoredDocument | None
) -> tuple[Profile, Binding] | None:
    head = stored.document.get("change_id") if stored else None
    record = audit.read(ref.tenant_id, ref.user_id, head) if head else None
    named = registry.get(record.profile_id) if record else None
    candidates = [named] if named else [registry.get(p) for p in registry.profile_ids()]
    for profile in candidates:
        found = profile.resolve(ref.namespace, ref.path) if profile else None
        if profile is not None and found is not None:
            return profile, found[0]
    return None


def document_ref(name: str) -> DocumentRef | None:
    """The document a blob name (container-relative) holds, if it is one."""
    parts = name.split("/")
    if len(parts) < 7 or parts[0] != "tenants" or parts[2] != "users" or parts[4] != "documents":
        return None
    return DocumentRef(parts[1], parts[3], parts[5], "/".join(parts[6:]))
