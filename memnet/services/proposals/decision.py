"""What a review decides and answers (:mod:`memnet.services.proposals.review`): the
:class:`Decision` the document's history records (``origin.review``), the
:class:`Reviewed` answer, and the :class:`Queue` a reviewer reads. Frozen values; each
``as_json`` is the one form stored or answered (``ProposalDecision`` and
``ProposalQueue`` of docs/api.md).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from memnet.domain.envelope import Json

_UNSAID = frozenset({"note", "sensitivity"})  # None: left out


@dataclass(frozen=True)
class Decision:
    """One decision on a proposal: ``approved``, ``edited`` or ``rejected``, by whom,
    on whose proposal, when, with the reviewer's note. ``sensitivity``, the proposal's
    class, is recorded so that a later review of it is answered only to a caller
    cleared for it; it is never answered."""

    proposal_id: str
    status: str
    reviewed_by: str
    proposed_by: str | None
    reviewed_at: str
    note: str | None = None
    sensitivity: str | None = None

    @classmethod
    def from_json(cls, stored: Json) -> Decision:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in stored.items() if k in known})

    def recorded(self) -> Json:
        """The decision as ``origin.review`` stores it: with the proposal's class."""
        found = {f.name: getattr(self, f.name) for f in fields(self)}
        return {k: v for k, v in found.items() if v is not None or k not in _UNSAID}

    def as_json(self) -> Json:
        """The decision as answered (and as the audit record's evidence holds it)."""
        return {k: v for k, v in self.recorded().items() if k != "sensitivity"}


@dataclass(frozen=True)
class Reviewed:
    """A review's answer: the decision, and for the write that made it the document's
    new ETag and (for a caller that may read) the document; ``replayed`` when the
    decision was found already taken (then neither)."""

    decision: Decision
    etag: str | None = None
    document: Json | None = None
    replayed: bool = False

    def as_json(self) -> Json:
        answer = self.decision.as_json()
        if self.etag is not None:
            answer["etag"] = self.etag
        if self.document is not None:
            answer["document"] = self.document
        return {**answer, "replayed": True} if self.replayed else answer


@dataclass(frozen=True)
class Queue:
    """The proposals a reviewer may see (each entry as
    :func:`memnet.domain.proposal_queue.queue_items` lists it); ``more``: a namespace
    held more documents than were read."""

    proposals: tuple[Json, ...]
    more: bool

    def as_json(self) -> Json:
        return {"proposals": list(self.proposals), "more": self.more}
