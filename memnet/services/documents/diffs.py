"""``GET {document}:diff`` (issue 27 item 2; docs/decisions.md "Diff of two versions"):
the RFC 6902 operations between two versions, each read through
:class:`~memnet.services.documents.versions.Versions` (one index for both), so the
same 404 and 410 rules hold as for ``as_of``."""

from __future__ import annotations

from dataclasses import dataclass

from memnet.domain.diffs import content_ops
from memnet.domain.document_model import StoredDocument
from memnet.domain.envelope import Json
from memnet.domain.layout import DocumentRef
from memnet.services.documents.versions import Versions

LATEST = "latest"


@dataclass(frozen=True)
class Diff:
    older: str
    newer: str
    ops: list[Json]

    def as_json(self) -> Json:
        return {"from": self.older, "to": self.newer, "ops": self.ops}


def diff(
    versions: Versions, ref: DocumentRef, current: StoredDocument, older: str, newer: str
) -> Diff:
    """The operations turning version ``older`` (a change id) into ``newer`` (a change
    id, or :data:`LATEST`: the current document)."""
    index = versions.index(ref, current)
    before = versions.document(ref, index, versions.position(ref, index, older))
    if newer == LATEST:
        newer, after = str(current.document.get("change_id")), current.document
    else:
        after = versions.document(ref, index, versions.position(ref, index, newer))
    return Diff(older, newer, content_ops(before, after))
