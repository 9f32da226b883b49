"""Typed results: small frozen dataclasses holding the fields an agent uses, plus
``raw``, the whole JSON object the server sent.

Why dataclasses and not TypedDicts: attribute access with completion, immutability (a
result is a record of what the server said, not a buffer to edit), and a stable surface
when the server adds members (they appear in ``raw`` without breaking anyone). A
TypedDict would claim keys the server omits (``document`` for a caller without the read
role) and could not hold values from headers (``replayed``). Each ``from_json`` reads
only what it names, so a result never fails on a member it does not know.
"""

from memnet_client.models.documents import (
    Change,
    Context,
    ContextDocument,
    Diff,
    Document,
    History,
    Version,
    WriteResult,
)
from memnet_client.models.events import Event, EventWrite, SearchHit, SearchResults
from memnet_client.models.fields import JsonObject
from memnet_client.models.inventory import EventList, ListedSnapshot, SnapshotList
from memnet_client.models.jobs import Job, Replay
from memnet_client.models.listing import DocumentList, ListedDocument
from memnet_client.models.why import Why, WhyChange

__all__ = [
    "JsonObject",
    "Document",
    "WriteResult",
    "Change",
    "History",
    "Why",
    "WhyChange",
    "Version",
    "Diff",
    "ListedDocument",
    "DocumentList",
    "ContextDocument",
    "Context",
    "Event",
    "EventWrite",
    "SearchHit",
    "SearchResults",
    "Replay",
    "Job",
    "EventList",
    "ListedSnapshot",
    "SnapshotList",
]
