"""Listing a namespace's documents through the client: one page with its continuation,
and ``iter_documents`` following continuations to the end."""

from __future__ import annotations

import pytest
from memnet_client import BadRequest, MemnetClient, NotFound

NAMES = ("alpha", "beta", "gamma")


def _projects(memnet: MemnetClient) -> None:
    for name in NAMES:
        ops = [{"op": "replace", "path": "/content/summary", "value": name}]
        memnet.patch_document("projects", f"{name}.json", ops, etag=None)


def test_list_documents_pages_with_a_continuation(memnet: MemnetClient):
    _projects(memnet)
    first = memnet.list_documents("projects", limit=2)
    assert [d.path for d in first.documents] == ["alpha.json", "beta.json"]
    assert first.continuation is not None
    rest = memnet.list_documents("projects", limit=2, continuation=first.continuation)
    assert [d.path for d in rest.documents] == ["gamma.json"] and rest.continuation is None
    read = memnet.get_document("projects", "alpha.json")
    assert first.documents[0].etag == read.etag
    assert first.documents[0].updated_at == read.updated_at
    assert first.documents[0].binding_id == "project_doc"


def test_iter_documents_follows_continuations(memnet: MemnetClient):
    _projects(memnet)
    assert [d.path for d in memnet.iter_documents("projects", limit=1)] == [
        f"{name}.json" for name in NAMES
    ]
    assert list(memnet.iter_documents("user")) == []


def test_listing_errors_are_the_clients_exceptions(memnet: MemnetClient):
    with pytest.raises(NotFound) as missing:
        memnet.list_documents("nowhere")
    assert missing.value.code == "BINDING_NOT_FOUND"
    with pytest.raises(BadRequest):
        memnet.list_documents("projects", continuation="abc")


def test_iter_events_follows_the_cursor_in_the_order_recorded(memnet: MemnetClient):
    made = [memnet.write_event(f"note {i}", source_type="chat").event.event_id for i in range(3)]
    first = memnet.list_events(limit=2)
    assert [e.event_id for e in first.events] == made[:2] and first.after is not None
    assert [e.event_id for e in memnet.iter_events(limit=1)] == made
    with pytest.raises(BadRequest):
        memnet.list_events(after="not a cursor")


def test_list_snapshots_names_each_with_its_replay_status(
    memnet: MemnetClient, admin: MemnetClient
):
    message = {"id": "m1", "role": "user", "text": "hi", "timestamp": "2026-11-24T10:00:00Z"}
    memnet.put_snapshot("conv-1", "snap-1", [message])
    (listed,) = admin.iter_snapshots()
    assert (listed.conversation_id, listed.snapshot_id) == ("conv-1", "snap-1")
    assert listed.replay_status == "queued" and listed.size
    assert admin.list_snapshots(limit=1).snapshots == (listed,)
