"""Context assembly and events: what an agent calls at the start of a conversation
(``assemble_context``) and while it runs (``write_event``, ``search_events``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Literal

import httpx

from memnet_client.base import ClientBase, json_of, replayed
from memnet_client.calls import Call, drop_none, segment
from memnet_client.models import Context, Event, EventWrite, JsonObject, SearchResults

Timestamp = str | datetime
Filter = str | Sequence[str]


def rfc3339(value: Timestamp) -> str:
    """A ``datetime`` as the RFC 3339 the server requires (a naive one is refused
    rather than guessed: the server refuses timestamps without a zone too)."""
    if isinstance(value, str):
        return value
    if value.tzinfo is None:
        raise ValueError("timestamp must be timezone-aware (e.g. datetime.now(UTC))")
    return value.isoformat()


def _filter(value: Filter | None) -> str | list[str] | None:
    return value if value is None or isinstance(value, str) else list(value)


class MemoryApi(ClientBase):
    def assemble_context(
        self,
        hint: str | None = None,
        *,
        project_id: str | None = None,
        max_docs: int | None = None,
        max_chars_total: int | None = None,
        render: Literal["json", "text"] | None = None,
        debug: bool | None = None,
        provenance: bool | None = None,
    ) -> Context:
        """The documents to inject at conversation start, each with its ETag;
        ``hint`` is the opening text the server routes to a project with;
        ``provenance=True`` adds where each item came from (``Context.provenance``)."""
        conversation_hint = drop_none(text=hint, project_id=project_id)
        body = drop_none(
            profile_id=self.profile,
            conversation_hint=conversation_hint or None,
            max_docs=max_docs,
            max_chars_total=max_chars_total,
            render=render,
            debug=debug,
            provenance=provenance,
        )
        url = self._user_path() + "/context:assemble"
        return self._send(Call("POST", url, _context, body))

    def write_event(
        self,
        digest: str,
        *,
        source_type: str,
        timestamp: Timestamp | None = None,
        keywords: Sequence[str] | None = None,
        project_ids: Sequence[str] | None = None,
        event_id: str | None = None,
        service_id: str | None = None,
        snapshot_uri: str | None = None,
        evidence: JsonObject | None = None,
        importance: float | None = None,
    ) -> EventWrite:
        """Store an event digest (``timestamp`` defaults to now, UTC); search finds it
        at once, or shortly when ``indexed`` is false."""
        body = drop_none(
            event_id=event_id,
            service_id=service_id,
            timestamp=rfc3339(timestamp or datetime.now(UTC)),
            source_type=source_type,
            digest=digest,
            keywords=None if keywords is None else list(keywords),
            project_ids=None if project_ids is None else list(project_ids),
            snapshot_uri=snapshot_uri,
            evidence=evidence,
            importance=importance,
        )
        url = self._user_path() + "/events"
        return self._send(Call("POST", url, _event_write, body, write=True))

    def get_event(self, event_id: str) -> Event:
        url = f"{self._user_path()}/events/{segment(event_id)}"
        return self._send(Call("GET", url, _event))

    def search_events(
        self,
        text: str | None = None,
        *,
        top_k: int | None = None,
        since: Timestamp | None = None,
        until: Timestamp | None = None,
        service_id: Filter | None = None,
        project_id: Filter | None = None,
        source_type: Filter | None = None,
        keywords: Sequence[str] | None = None,
        recency_half_life_days: float | None = None,
        ranking: JsonObject | None = None,
        dense_weight: float | None = None,
    ) -> SearchResults:
        """Events best matching ``text`` (none: newest first), filtered; ``since`` is
        inclusive, ``until`` exclusive. ``ranking`` (``{"relevance": 0.7, "importance":
        0.3}``) blends relevance with the events' importance and recency; without it the
        client's profile's ``search_rules.ranking`` applies, if it has one.
        ``dense_weight`` (0-1): on a server with an embedder, the share of the semantic
        ranking in hybrid search (0: words only); else the profile's or server's."""
        bounds = {"from": since, "to": until}
        time_range = {name: rfc3339(value) for name, value in bounds.items() if value is not None}
        body = drop_none(
            text=text,
            top_k=top_k,
            time_range=time_range or None,
            service_id=_filter(service_id),
            project_id=_filter(project_id),
            source_type=_filter(source_type),
            keywords=None if keywords is None else list(keywords),
            recency_half_life_days=recency_half_life_days,
            ranking=ranking,
            dense_weight=dense_weight,
            profile_id=self.profile,
        )
        url = self._user_path() + "/events:search"
        return self._send(Call("POST", url, _search, body))


def _context(response: httpx.Response) -> Context:
    return Context.from_json(json_of(response))


def _event(response: httpx.Response) -> Event:
    return Event.from_json(json_of(response))


def _event_write(response: httpx.Response) -> EventWrite:
    return EventWrite.from_json(json_of(response), replayed=replayed(response))


def _search(response: httpx.Response) -> SearchResults:
    return SearchResults.from_json(json_of(response))
