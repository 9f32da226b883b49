"""Fault injection for the retention sweep: the process dies before any one of the
sweep's storage writes and deletes (claiming the lease, removing index entries first,
raising the audit horizon, each delete, saving its place). After a restart, once the
dead instance's lease lapses, the next sweep finishes the pass: nothing that should
stay is gone (documents, held data, a readable history), nothing that should go is left
(blobs or index entries). On both backends (on Azurite, three of the crash points)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from memnet import bootstrap
from memnet.settings import Settings
from memnet.wiring import blob_store
from tests.api.test_documents import PREF, patch
from tests.api.test_retention import Clock, World, indexed, kinds, populate
from tests.clients import DirectClient
from tests.conftest import AGENT_KEY, backend_settings, doc_url
from tests.faults.test_crash_points import CrashingBlobStore, SimulatedCrash

MUTATIONS_PER_SWEEP = 13  # lease claim, horizon, 10 deletes, one save of its place


@pytest.fixture(params=["local", "azurite"])
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Settings]:
    yield backend_settings(request, request.param, tmp_path / "data")
    bootstrap.install(None)


def start(settings: Settings, clock: Clock, store: CrashingBlobStore) -> World:
    built = bootstrap.build(settings, blobs=store, clock=clock)
    bootstrap.install(built)
    world = World(built, clock, DirectClient(AGENT_KEY))
    world.mark_start()
    return world


# Every point on the file store; on Azurite the lease claim, a delete and the save of its
# place (a crash is the same exception before the same write on either; what Azure's blobs
# do under the sweep is its contract suite's and tests/api/test_retention.py's).
CRASHES = [("local", n) for n in range(1, MUTATIONS_PER_SWEEP + 2)]
CRASHES += [("azurite", n) for n in (1, 7, MUTATIONS_PER_SWEEP)]


@pytest.mark.parametrize(("settings", "crash_before"), CRASHES, indirect=["settings"])
def test_a_crash_anywhere_in_a_sweep_is_finished_by_the_next_one(
    settings: Settings, crash_before: int
) -> None:
    clock, store = Clock(), CrashingBlobStore(blob_store(settings), 0)
    world = start(settings, clock, store)
    etag = populate(world)
    world.services.holds.set("t1", "u1", {"reason": "audit", "kinds": ["snapshots"]}, "admin")
    world.at_day(400)
    store.mutations, store.crash_before = 0, crash_before
    with contextlib.suppress(SimulatedCrash):
        world.sweep()
    assert store.mutations == min(crash_before, MUTATIONS_PER_SWEEP)  # every point reached
    store.crash_before = 0
    clock.advance(minutes=10)  # the dead instance's lease lapses
    restarted = start(settings, clock, store)
    while not restarted.sweep()["pass_complete"]:
        pass
    expected = {"documents": 1, "audit_horizon.json": 1, "snapshots": 1, "replays": 1}
    assert kinds(restarted) == expected  # the snapshot is held, and keeps its replay record
    assert indexed(restarted) == 0
    page = restarted.client.request("GET", doc_url() + ":history").data
    assert page["changes"] == [] and page["truncated"] is True
    document = restarted.client.request("GET", doc_url())
    assert document.status == 200 and document.data["etag"] == etag


def test_a_write_that_died_after_its_document_past_the_horizon_replays_without_a_document(
    settings: Settings,
) -> None:
    """A crash before completing the key, another change, then the retry: the change
    landed, but the document as it was then cannot be rebuilt from a history whose start
    retention removed; the replay says so instead of inventing one."""
    clock, store = Clock(), CrashingBlobStore(blob_store(settings), 0)
    world = start(settings, clock, store)
    etag = populate(world)
    world.at_day(400)
    world.sweep()
    ops = [{"op": "add", "path": PREF, "value": {"text": "late"}}]
    store.mutations, store.crash_before = 0, 4  # claim, audit, document, then complete dies
    with contextlib.suppress(SimulatedCrash):
        patch(world.client, etag, ops, "dies")
    store.crash_before = 0
    latest = world.client.request("GET", doc_url()).data["etag"]
    other = [{"op": "add", "path": PREF, "value": {"text": "other"}}]
    assert patch(world.client, latest, other, "other").status == 200
    retried = patch(world.client, etag, ops, "dies")
    assert retried.status == 200, retried.data
    assert retried.data["etag"] == latest
    assert retried.data["document"] is None and retried.data["history_truncated"] is True
