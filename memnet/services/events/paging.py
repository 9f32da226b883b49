"""Paging through a user's events (issue 27, item 7; docs/api.md "Listing what exists"), not
by search: ``GET .../events?limit=&after=``.

The order is the event blobs' name order, that is event id order: the one order both
storage backends list natively, with a marker that names a position (the file store:
the last name returned; Azure: the service's ``NextMarker``, the next name). A cursor
is that marker, so an event can neither be skipped nor repeated by the paging itself:
ids are unique (no tie at a page boundary), and an event written while paging only
lands before or after the cursor, never moving the events already there. An event id
the service derives is time-sortable (``evt_`` + the idempotency claim's change id), so
for those the order is the order they were recorded; an id a client chose sorts where
its text does. A page reads ``limit`` names and each event once; events the caller may
not see (sensitivity classes, as ``GET`` of one event), blobs that hold no event and,
with ``conversation_id``, events of other conversations are left out, so a page may hold
fewer events than ``limit`` (even none) and still have a cursor.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from memnet.domain.callers import Caller
from memnet.domain.layout import user_prefix
from memnet.domain.retraction import points_at
from memnet.ports import BlobNotFound, BlobStore
from memnet.services.documents.listing import decode_token, encode_token, page_at
from memnet.services.events.classes import EventClasses
from memnet.services.events.records import EventRecord


@dataclass(frozen=True)
class EventPage:
    events: tuple[EventRecord, ...]
    after: str | None  # the cursor of the next page; None: this was the last

    def as_json(self) -> dict[str, object]:
        return {"events": [e.as_json() for e in self.events], "after": self.after}


class EventPaging:
    def __init__(self, blobs: BlobStore, classes: EventClasses) -> None:
        self._blobs, self._classes = blobs, classes

    def list_events(
        self,
        caller: Caller,
        tenant_id: str,
        user_id: str,
        limit: int,
        after: str | None = None,
        conversation_id: str | None = None,
    ) -> EventPage:
        """Role ``read`` (as reading one event). ``after`` is a cursor this listing
        answered, for the same ``conversation_id`` (else 400 ``INVALID_QUERY``)."""
        caller.require(tenant_id, "read")
        scope = "events" if conversation_id is None else f"events/{conversation_id}"
        marker = decode_token(after, scope, "after")
        prefix = f"{user_prefix(tenant_id, user_id)}events/"
        page = page_at(self._blobs, prefix, marker, limit, "after")
        visible = self._classes.visible(caller)
        found = (self._read(info.name) for info in page.items)
        wanted = (
            e
            for e in found
            if e is not None and e.shown(visible) and _of(e, tenant_id, user_id, conversation_id)
        )
        return EventPage(tuple(wanted), encode_token(scope, page.continuation))

    def _read(self, name: str) -> EventRecord | None:
        """The event a listed blob holds; None when it is gone since the listing or holds
        no event (search skips such a blob too)."""
        try:
            return EventRecord.from_json(json.loads(self._blobs.read(name).data))
        except (BlobNotFound, ValueError, TypeError, KeyError):
            return None


def _of(event: EventRecord, tenant_id: str, user_id: str, conversation_id: str | None) -> bool:
    """Whether ``event`` came from the conversation (its evidence or its snapshot points
    at it, as a forget of the conversation finds it); every event when None."""
    if conversation_id is None:
        return True
    matches = points_at(tenant_id, user_id, conversation_id)
    return matches(event.evidence or {}) or matches({"snapshot_uri": event.snapshot_uri})
