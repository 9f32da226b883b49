"""Deleting expired documents (issue 15, capability 2; :mod:`memnet.domain.expiry`).

An expired document already reads as absent; this removes its bytes. The deletion is
recorded first, in the tenant's governance log (``document_expired``: who, which
document, which version, when it expired), then the blob is deleted under the ETag that
was read, so a create that took the expired document's place since is never deleted.
A crash between the two leaves a logged expiry whose document the next sweep deletes
(logging it again). The document's audit records stay until the audit retention rule
removes them, like any other change's (docs/profiles.md "Short-lived memory").
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from memnet.domain.document_model import StoredDocument
from memnet.domain.envelope import EXPIRES_AT
from memnet.domain.expiry import expired
from memnet.domain.layout import DocumentRef
from memnet.ports import BlobInfo, BlobNotFound, BlobStore, Clock, Condition, PreconditionFailed
from memnet.services.governance.holds import LegalHolds
from memnet.services.profiles.registry import ProfileRegistry


def shortest_ttl(registry: ProfileRegistry) -> timedelta | None:
    """The shortest ``ttl_seconds`` of any loaded binding; None: no document expires."""
    ttls = [
        binding.ttl_seconds
        for profile in map(registry.get, registry.profile_ids())
        if profile is not None
        for binding in profile.bindings
        if binding.ttl_seconds is not None
    ]
    return timedelta(seconds=min(ttls)) if ttls else None


def document_ref(name: str) -> DocumentRef | None:
    """The document a blob name addresses (``tenants/{t}/users/{u}/documents/{ns}/...``)."""
    parts = name.split("/", 6)
    if len(parts) < 7 or parts[0] != "tenants" or parts[2] != "users":
        return None
    if parts[4] != "documents" or not parts[6]:
        return None
    return DocumentRef(parts[1], parts[3], parts[5], parts[6])


class DocumentExpiry:
    """``floor``: the shortest TTL configured (:func:`shortest_ttl`); a document last
    written less than that long ago cannot have expired and is not read."""

    def __init__(self, blobs: BlobStore, clock: Clock, floor: timedelta | None) -> None:
        self._blobs, self._clock, self._floor = blobs, clock, floor
        self._log = LegalHolds(blobs, clock)

    def due(self, info: BlobInfo, now: datetime) -> StoredDocument | None:
        """The listed document if it has expired at ``now`` (one read, only for a blob
        old enough to have), else None."""
        if self._floor is None or info.last_modified + self._floor > now:
            return None
        try:
            blob = self._blobs.read(info.name)
            stored = StoredDocument(blob.etag, json.loads(blob.data), blob.data)
        except (BlobNotFound, ValueError):
            return None
        if not isinstance(stored.document, dict) or not expired(stored.document, now):
            return None
        return stored

    def expire(self, ref: DocumentRef, stored: StoredDocument, actor: str) -> bool:
        """Delete ``stored`` (the version of ``ref`` that was read) if it has expired;
        False if it has not, or it changed or went since it was read."""
        if not expired(stored.document, self._clock.now()):
            return False
        self._log.log(
            ref.tenant_id,
            "document_expired",
            actor,
            user_id=ref.user_id,
            namespace=ref.namespace,
            path=ref.path,
            change_id=stored.document.get("change_id"),
            expires_at=stored.document.get(EXPIRES_AT),
        )
        try:
            self._blobs.delete(ref.blob_name, Condition.match(stored.etag))
        except (BlobNotFound, PreconditionFailed):
            return False
        return True
