"""Listing what a user has, by a stable cursor (not by search): events and snapshots."""

from __future__ import annotations

from collections.abc import Iterator

import httpx

from memnet_client.base import ClientBase, json_of
from memnet_client.calls import Call, drop_none
from memnet_client.models.events import Event
from memnet_client.models.inventory import EventList, ListedSnapshot, SnapshotList


def _events(response: httpx.Response) -> EventList:
    return EventList.from_json(json_of(response))


def _snapshots(response: httpx.Response) -> SnapshotList:
    return SnapshotList.from_json(json_of(response))


class InventoryApi(ClientBase):
    def list_events(
        self,
        *,
        limit: int | None = None,
        after: str | None = None,
        conversation_id: str | None = None,
    ) -> EventList:
        """One page of the user's events in event id order (``limit`` 1-500, default
        100); ``after=page.after`` for the next. Events written while paging never make
        another be skipped or repeated."""
        params = drop_none(limit=limit, after=after, conversation_id=conversation_id)
        query = {k: str(v) for k, v in params.items()}
        return self._send(Call("GET", self._user_path() + "/events", _events, params=query))

    def iter_events(
        self, *, limit: int | None = None, conversation_id: str | None = None
    ) -> Iterator[Event]:
        """Every event the caller may see, page after page."""
        after: str | None = None
        while True:
            page = self.list_events(limit=limit, after=after, conversation_id=conversation_id)
            yield from page.events
            if page.after is None:
                return
            after = page.after

    def list_snapshots(self, *, limit: int | None = None, after: str | None = None) -> SnapshotList:
        """One page of the user's snapshots with their replay status, no content (role
        ``snapshots`` or ``admin``)."""
        query = {k: str(v) for k, v in drop_none(limit=limit, after=after).items()}
        url = self._user_path() + "/snapshots"
        return self._send(Call("GET", url, _snapshots, params=query))

    def iter_snapshots(self, *, limit: int | None = None) -> Iterator[ListedSnapshot]:
        after: str | None = None
        while True:
            page = self.list_snapshots(limit=limit, after=after)
            yield from page.snapshots
            if page.after is None:
                return
            after = page.after
