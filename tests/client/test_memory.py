"""Context assembly, events and search through the client against the real server."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from memnet_client import BadRequest, MemnetClient, NotFound

from tests.client.conftest import append_preference

DYNAMIC = ("user", "user_dynamic.json")


def test_context_lists_documents_with_etags_and_dropped_bindings(memnet: MemnetClient):
    written = memnet.update(*DYNAMIC, append_preference("Be brief."))
    context = memnet.assemble_context("help with project alpha", render="text")
    [entry] = [d for d in context.documents if d.binding_id == "user_dynamic"]
    assert (entry.namespace, entry.path) == DYNAMIC
    assert entry.document.etag == written.etag
    assert entry.document.content["preferences"] == [{"text": "Be brief."}]
    assert {d["binding_id"] for d in context.dropped_bindings} >= {"user_static"}
    assert context.rendered and "user_dynamic" in context.rendered


def test_context_debug_shows_routing_for_a_debug_caller(memnet: MemnetClient):
    context = memnet.assemble_context("anything", debug=True)
    assert context.routing_debug is not None and "reason" in context.routing_debug


def test_write_get_and_search_an_event(memnet: MemnetClient):
    written = memnet.write_event(
        "User asked to split memory by contention and lifecycle.",
        source_type="chat",
        keywords=["memory", "config"],
        project_ids=["project-alpha"],
    )
    assert written.indexed and not written.replayed
    event = memnet.get_event(written.event.event_id)
    assert event.digest.startswith("User asked") and event.recorded_by == "dev-agent"
    assert event.keywords == ("memory", "config")
    results = memnet.search_events("lifecycle", top_k=5, project_id="project-alpha")
    assert [hit.event.event_id for hit in results] == [event.event_id]
    assert results[0].score > 0 and len(results) == 1


def test_search_filters_by_time_range_with_aware_datetimes(memnet: MemnetClient):
    now = datetime.now(UTC)
    memnet.write_event("old news", source_type="chat", timestamp=now - timedelta(days=10))
    memnet.write_event("fresh news", source_type="chat", timestamp=now)
    recent = memnet.search_events(since=now - timedelta(days=1), until=now + timedelta(minutes=1))
    assert [hit.event.digest for hit in recent] == ["fresh news"]
    with pytest.raises(ValueError, match="timezone"):
        memnet.search_events(since=datetime(2026, 1, 1))


def test_missing_event_and_bad_field_map_to_errors(memnet: MemnetClient):
    with pytest.raises(NotFound) as missing:
        memnet.get_event("evt_missing")
    assert missing.value.code == "EVENT_NOT_FOUND"
    with pytest.raises(BadRequest) as bad:
        memnet.search_events(top_k=1000)
    assert bad.value.code == "INVALID_FIELD"
