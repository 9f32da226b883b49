"""The whole replay path on the local host, as `scripts/serve` runs it: an upload over
real HTTP, the queue-triggered worker run by the host, the rule extractor; and a
snapshot written straight to the store, found by the host's blob-trigger poller, which
hands the trigger a client naming the blob and never reads it (the poller's store here
cannot read: only the replay worker, through the services, reads the snapshot)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import function_app
from funchost import RunningServer, start_in_thread
from memnet import bootstrap
from memnet.bootstrap import Services
from memnet.domain.layout import SnapshotRef
from memnet.ports import Condition
from memnet.services.replay.sealing import MAX_SEALED_BYTES, seal
from tests.api.test_replay import padded
from tests.clients import HttpClient, Reply
from tests.conftest import AGENT_KEY, doc_url, make_settings
from tests.host.test_blob_trigger import Unreadable

TRANSCRIPT = {
    "messages": [
        {
            "id": "m1",
            "role": "user",
            "text": "Remember that I work from Lisbon.",
            "timestamp": "2026-11-24T10:00:00Z",
        },
        {
            "id": "m2",
            "role": "user",
            "text": "I prefer short answers.",
            "timestamp": "2026-11-24T10:00:05Z",
        },
        {"id": "m3", "role": "assistant", "text": "Noted.", "timestamp": "2026-11-24T10:00:06Z"},
    ]
}


@pytest.fixture
def host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Services, RunningServer]]:
    services = bootstrap.build(make_settings(tmp_path / "data"))
    monkeypatch.setenv("MEMNET_BLOB_CONTAINER", services.settings.blob_container)
    bootstrap.install(services)
    server = start_in_thread(
        function_app.app,
        route_prefix="",
        queues=services.queue,
        blobs=Unreadable(services.blobs),
        blob_container=services.settings.blob_container,
        blob_poll_seconds=0.05,
    )
    yield services, server
    server.stop()
    bootstrap.install(None)


def settled(client: HttpClient, url: str, timeout: float = 20.0) -> Reply:
    deadline = time.monotonic() + timeout
    while True:
        reply = client.request("GET", url)
        if reply.status == 200 and reply.data["status"] not in ("queued", "running"):
            return reply
        assert time.monotonic() < deadline, reply.data
        time.sleep(0.05)


def test_an_uploaded_snapshot_is_replayed_by_the_host(host):
    _, server = host
    client = HttpClient(server.url, AGENT_KEY)
    url = "/v1/tenants/acme/users/alice/snapshots/c1/s1"
    assert client.request("PUT", url, TRANSCRIPT).status == 202
    status = settled(client, url + "/replay").data
    assert status["status"] == "applied", status
    assert status["extractor"]["name"] == "rules"
    content = client.request("GET", doc_url(tenant="acme", user="alice")).data["document"][
        "content"
    ]
    assert [p["text"] if isinstance(p, dict) else p for p in content["preferences"]]
    assert content["pending_confirmations"][0]["evidence"]["message_ids"] == ["m1"]
    history = client.request("GET", doc_url(tenant="acme", user="alice") + ":history").data
    assert {c["reason"] for c in history["changes"]} == {"replay_update"}


def test_a_snapshot_written_straight_to_the_store_is_replayed_by_the_host(host):
    services, server = host
    ref = SnapshotRef("acme", "bob", "c9", "s9")
    body: dict[str, Any] = {**TRANSCRIPT, "profile_id": "project-copilot-v1"}
    sealed = seal(json.dumps(body).encode(), ref.blob_name.encode(), services.snapshots._keys)
    services.blobs.write(ref.blob_name, sealed, Condition.create_only())
    client = HttpClient(server.url, AGENT_KEY)
    status = settled(client, "/v1/tenants/acme/users/bob/snapshots/c9/s9/replay").data
    assert status["status"] == "applied" and status["source"] == "blob_trigger"


def test_a_snapshot_written_straight_to_the_store_over_the_bound_fails_on_the_host(host):
    """The bound is the store's read (docs/replay.md): a blob of exactly
    ``MAX_SEALED_BYTES`` replays, one byte more ends ``failed`` without being read."""
    services, server = host
    client = HttpClient(server.url, AGENT_KEY)
    body: dict[str, Any] = {**TRANSCRIPT, "profile_id": "project-copilot-v1"}
    for snapshot_id, size in (("at-bound", MAX_SEALED_BYTES), ("over", MAX_SEALED_BYTES + 1)):
        ref = SnapshotRef("acme", "bob", "c9", snapshot_id)
        services.blobs.write(ref.blob_name, padded(services, ref, body, size), Condition())
    url = "/v1/tenants/acme/users/bob/snapshots/c9/{}/replay"
    assert settled(client, url.format("at-bound")).data["status"] == "applied"
    over = settled(client, url.format("over")).data
    assert (over["status"], over["source"]) == ("failed", "blob_trigger")
    assert over["error"]["code"] == "SNAPSHOT_TOO_LARGE" and over["events"] == []


def test_an_export_is_written_by_the_hosts_queue_worker(host):
    """The local host runs the ``memnet-export`` queue trigger as Azure would (issue 27)."""
    _, server = host
    client = HttpClient(server.url, AGENT_KEY)
    queued = client.request("POST", "/v1/tenants/acme/users/alice:export")
    assert queued.status == 202, queued.data
    status = settled(client, queued.data["status_url"]).data
    assert status["status"] == "done", status
    manifest = client.request("GET", status["files_url"] + "manifest.json")
    assert manifest.status == 200 and manifest.data["format"] == "memnet-export/1"
