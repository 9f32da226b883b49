"""Index failures lose nothing (issue 4, docs/decisions.md "Events and search"): the event
blob is the record; when indexing fails the write still succeeds and the real
queue-triggered function of ``function_app.py``, run by the local host, indexes the event
once the index is back.
Also the operator's ``memnet reindex`` command. Local files and SQLite queue, and
Azure Blob and Azure Storage Queues on Azurite."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from funchost import start_in_thread
from funchost.queues import PortQueueSource
from memnet import bootstrap
from memnet.adapters.local.search import SqliteSearchIndex
from memnet.bootstrap import Services
from memnet.ports import (
    BlobStore,
    Condition,
    EventHit,
    EventQuery,
    IndexedEvent,
    MessageQueue,
    StorageError,
    StorageUnavailable,
)
from memnet.services.search.index import INDEX_QUEUE
from tests.api.test_events import BASE, event, ids, post, search
from tests.clients import DirectClient
from tests.conftest import AGENT_KEY, REPO, SERVICE_BACKENDS, backend_settings, make_settings


class FlakyIndex:
    """A real SQLite index that can be switched off, as an Azure AI Search outage would be;
    it counts the upserts it refused. ``fault`` makes every upsert raise that error;
    ``refuse`` names events it refuses for good (a batch holding one fails)."""

    def __init__(self, inner: SqliteSearchIndex) -> None:
        self.inner, self.down, self.refused = inner, False, 0
        self.fault: Exception | None = None
        self.refuse: set[str] = set()
        self._lock = threading.Lock()

    def upsert(self, events: list[IndexedEvent]) -> None:
        with self._lock:
            if self.down:
                self.refused += 1
                raise StorageUnavailable("search index unavailable (test outage)")
        if self.fault is not None:
            raise self.fault
        if self.refuse & {e.event_id for e in events}:
            raise StorageError("document rejected by the index (test)")
        self.inner.upsert(events)

    def delete(self, tenant_id: str, user_id: str, event_ids: list[str]) -> None:
        self.inner.delete(tenant_id, user_id, event_ids)

    def search(self, query: EventQuery) -> list[EventHit]:
        return self.inner.search(query)

    def list_event_ids(
        self, tenant_id: str, user_id: str | None = None
    ) -> Iterator[tuple[str, str, str]]:
        return self.inner.list_event_ids(tenant_id, user_id)

    def erase_deleted(self) -> None:
        self.inner.erase_deleted()

    def describe(self) -> str:
        return "flaky " + self.inner.describe()


class FlakyQueue:
    """A real queue whose sends can be switched off."""

    def __init__(self, inner: MessageQueue) -> None:
        self.inner, self.down = inner, False

    def send(self, queue: str, body: str, *, delay_seconds: int = 0) -> str:
        if self.down:
            raise StorageUnavailable("queue unavailable (test outage)")
        return self.inner.send(queue, body, delay_seconds=delay_seconds)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class EventBlobFaults:
    """A real blob store whose next event write fails: ``"lost"`` after it landed (the
    response is lost), ``"refused"`` before it landed."""

    def __init__(self, inner: BlobStore) -> None:
        self.inner, self.next_fault = inner, ""

    def write(self, name: str, data: bytes, condition: Condition) -> str:
        fault = ""
        if "/events/" in name:
            fault, self.next_fault = self.next_fault, ""
        if fault == "refused":
            raise StorageUnavailable("blob storage unavailable (test fault)")
        etag = self.inner.write(name, data, condition)
        if fault == "lost":
            raise StorageUnavailable("connection reset after the write (test fault)")
        return etag

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.fixture(params=SERVICE_BACKENDS)
def flaky(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Services, FlakyIndex]]:
    settings = backend_settings(request, request.param, tmp_path / "data")
    index = FlakyIndex(SqliteSearchIndex(tmp_path / "search.sqlite3"))
    built = bootstrap.build(settings, index=index)
    bootstrap.install(built)
    yield built, index
    bootstrap.install(None)


@pytest.fixture
def faulty(
    flaky: tuple[Services, FlakyIndex],
) -> Iterator[tuple[Services, FlakyQueue, EventBlobFaults]]:
    """The services of ``flaky`` with a switchable queue and event-blob faults too."""
    services, index = flaky
    queue, blobs = FlakyQueue(services.queue), EventBlobFaults(services.blobs)
    built = bootstrap.build(services.settings, index=index, queue=queue, blobs=blobs)  # type: ignore[arg-type]
    bootstrap.install(built)
    yield built, queue, blobs


def event_blobs(services: Services) -> list[str]:
    return list(services.blobs.list_names("tenants/t1/users/u1/events/"))


def wait_for(condition: Callable[[], bool], seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.05)


def test_write_during_an_index_outage_is_indexed_by_the_queue_trigger_later(
    flaky: tuple[Services, FlakyIndex],
):
    services, index = flaky
    client = DirectClient(AGENT_KEY)
    index.down = True
    reply = post(client, event(digest="Chose pgvector for the retrieval store."), "outage-1")
    assert reply.status == 201 and reply.data["indexed"] is False
    event_id = reply.data["event"]["event_id"]
    assert client.request("GET", f"{BASE}/events/{event_id}").status == 200  # the record
    assert ids(search(client, text="pgvector")) == []
    assert services.queue.count(INDEX_QUEUE) == 1
    # A second between deliveries: on the in-memory queue a retry takes microseconds, and
    # with no delay 50 failed deliveries would send the message to poison before the
    # index is back.
    source = PortQueueSource(services.queue, max_dequeue_count=50, retry_delay=1)
    import function_app

    with start_in_thread(function_app.app, route_prefix="", queue_source=source, run_timers=False):
        wait_for(lambda: index.refused >= 3)  # the worker fails while the index is down ...
        index.down = False  # ... and succeeds on a retry once it is back
        wait_for(lambda: ids(search(client, text="pgvector")) == [event_id])
        wait_for(lambda: services.queue.count(INDEX_QUEUE) == 0)
    assert services.queue.count(INDEX_QUEUE + "-poison") == 0


def test_a_retried_write_after_an_outage_indexes_without_a_second_event(
    flaky: tuple[Services, FlakyIndex],
):
    services, index = flaky
    client = DirectClient(AGENT_KEY)
    index.down = True
    first = post(client, event(digest="Standup moved to 9:30."), "retry-1")
    index.down = False
    again = post(client, event(digest="Standup moved to 9:30."), "retry-1")
    assert again.status == 201 and again.data["event"] == first.data["event"]
    assert again.headers.get("idempotent-replayed") == "true"
    assert services.events.drain().jobs == 1  # the job queued during the outage, harmless now
    assert ids(search(client, text="standup")) == [first.data["event"]["event_id"]]


def test_index_and_queue_both_down_is_503_and_the_retry_indexes_the_same_event(
    faulty: tuple[Services, FlakyQueue, EventBlobFaults], flaky: tuple[Services, FlakyIndex]
):
    services, queue = faulty[0], faulty[1]
    index = flaky[1]
    client = DirectClient(AGENT_KEY)
    index.down = queue.down = True
    failed = post(client, event(digest="Budget approved for the GPU cluster."), "both-down")
    assert (failed.status, failed.error_code) == (503, "DEPENDENCY_UNAVAILABLE")
    assert len(event_blobs(services)) == 1  # the record is stored; the claim stays open
    index.down = queue.down = False
    retried = post(client, event(digest="Budget approved for the GPU cluster."), "both-down")
    assert retried.status == 201 and retried.data["indexed"] is True
    assert len(event_blobs(services)) == 1  # the same event, not a second one
    assert ids(search(client, text="gpu budget")) == [retried.data["event"]["event_id"]]


def test_an_index_failing_in_any_way_after_the_blob_is_stored_is_indexed_false(
    flaky: tuple[Services, FlakyIndex],
):
    """Issue 8: only storage errors were caught; any other index error was a 500 for a
    write that was durable, and again on every retry."""
    services, index = flaky
    client = DirectClient(AGENT_KEY)
    index.fault = ValueError("an index adapter bug")
    reply = post(client, event(digest="Moved the offsite to May."), "any-fault")
    assert (reply.status, reply.data["indexed"]) == (201, False), reply.data
    assert services.queue.count(INDEX_QUEUE) == 1
    index.fault = None
    assert services.events.drain().indexed == 1
    assert ids(search(client, text="offsite")) == [reply.data["event"]["event_id"]]


def test_any_index_failure_with_the_queue_down_is_503_and_the_retry_completes(
    faulty: tuple[Services, FlakyQueue, EventBlobFaults], flaky: tuple[Services, FlakyIndex]
):
    services, queue, index = faulty[0], faulty[1], flaky[1]
    client = DirectClient(AGENT_KEY)
    index.fault, queue.down = ValueError("an index adapter bug"), True
    failed = post(client, event(digest="Renewed the domain."), "fault-and-queue")
    assert (failed.status, failed.error_code) == (503, "DEPENDENCY_UNAVAILABLE")
    index.fault, queue.down = None, False
    retried = post(client, event(digest="Renewed the domain."), "fault-and-queue")
    assert (retried.status, retried.data["indexed"]) == (201, True)
    assert len(event_blobs(services)) == 1


def test_an_event_write_whose_response_is_lost_settles_to_the_stored_event(
    faulty: tuple[Services, FlakyQueue, EventBlobFaults],
):
    services, _, blobs = faulty
    client = DirectClient(AGENT_KEY)
    blobs.next_fault = "lost"
    reply = post(client, event(digest="Dentist on Friday at 10."), "lost-1")
    assert reply.status == 201, reply.data  # the write landed: that is the outcome
    again = post(client, event(digest="Dentist on Friday at 10."), "lost-1")
    assert again.data["event"] == reply.data["event"]
    assert len(event_blobs(services)) == 1


def test_an_event_write_refused_by_storage_is_503_and_the_key_stays_usable(
    faulty: tuple[Services, FlakyQueue, EventBlobFaults],
):
    services, _, blobs = faulty
    client = DirectClient(AGENT_KEY)
    blobs.next_fault = "refused"
    failed = post(client, event(digest="Dentist on Friday at 10."), "refused-1")
    assert (failed.status, failed.error_code) == (503, "DEPENDENCY_UNAVAILABLE")
    assert event_blobs(services) == []
    assert post(client, event(digest="Dentist on Friday at 10."), "refused-1").status == 201
    assert len(event_blobs(services)) == 1


def test_reindex_command_rebuilds_a_lost_index_from_the_blobs(tmp_path: Path):
    data_dir = tmp_path / "data"
    services = bootstrap.build(make_settings(data_dir))
    bootstrap.install(services)
    client = DirectClient(AGENT_KEY)
    try:
        made = [
            post(client, event(digest=f"Note {n} about the billing export."), f"n{n}").data
            for n in range(5)
        ]
        before = ids(search(client, text="billing export"))
    finally:
        bootstrap.install(None)
    assert sorted(before) == sorted(m["event"]["event_id"] for m in made)
    bad = "tenants/t1/users/u1/events/evt_bad.json"
    services.blobs.write(bad, b"{not json", Condition.create_only())
    (data_dir / "search.sqlite3").unlink()  # the index is derived: lose it entirely
    for suffix in ("-wal", "-shm"):
        (data_dir / f"search.sqlite3{suffix}").unlink(missing_ok=True)
    output = run_cli(data_dir, "reindex", "--tenant", "t1", "--user", "u1", "--drain")
    assert '"events": 6' in output and "0 left" in output
    assert '"indexed": 5' in output and '"skipped": 1' in output and "evt_bad" in output
    bootstrap.install(bootstrap.build(services.settings))
    try:
        assert ids(search(client, text="billing export")) == before
    finally:
        bootstrap.install(None)


def test_reindex_command_rejects_a_user_without_a_tenant(tmp_path: Path):
    with pytest.raises(subprocess.CalledProcessError) as failed:
        run_cli(tmp_path / "data", "reindex", "--user", "u1")
    assert failed.value.returncode == 2 and "--user needs --tenant" in failed.value.stderr


def test_create_search_index_on_the_embedded_default_has_nothing_to_do(tmp_path: Path):
    assert "nothing to create" in run_cli(tmp_path / "data", "create-search-index")


def run_cli(data_dir: Path, *args: str) -> str:
    env = {
        **os.environ,
        "MEMNET_DATA_DIR": str(data_dir),
        "MEMNET_PROFILES_DIR": str(REPO / "profiles"),
        "MEMNET_CALLERS_FILE": str(REPO / "callers.dev.json"),
    }
    command = [sys.executable, "-m", "memnet", *args, "--settings", str(data_dir / "none.json")]
    done = subprocess.run(
        command, cwd=REPO, env=env, capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout
