"""One bad event never fails a batch or stops a rebuild (issue 8, docs/decisions.md).

Event blobs that cannot be indexed (not JSON, not an event, an ISO week date, another
event's id) are planted straight in the blob store among good ones, as storage written
by an older version or by hand would hold them. The reindex, worked off in-process or by
the real queue trigger of ``function_app.py``, indexes every good event, skips and
reports the bad ones, and sends nothing to the poison queue. Local files and Azurite."""

from __future__ import annotations

import json
from typing import Any

import pytest

from funchost import start_in_thread
from funchost.queues import PortQueueSource
from memnet.bootstrap import Services
from memnet.cli.search import OPERATOR
from memnet.ports import Condition, EventQuery, StorageError
from memnet.services.search.index import INDEX_QUEUE
from tests.api.test_event_indexing import FlakyIndex, flaky, wait_for
from tests.api.test_events import event, ids, post, search
from tests.clients import DirectClient
from tests.conftest import AGENT_KEY

EVENTS = "tenants/t1/users/u1/events/"


def record(event_id: str, **changes: Any) -> bytes:
    body = {**event(digest=f"Planted note {event_id}."), **changes}
    return json.dumps({**body, "event_id": event_id, "tenant_id": "t1", "user_id": "u1"}).encode()


BAD = {
    "evt_not_json": b"{this is not json",
    "evt_not_utf8": b"\xff\xfe\x00",
    "evt_a_list": b"[1, 2, 3]",
    "evt_week_date": record("evt_week_date", timestamp="2026-W01-1T00:00Z"),
    "evt_spaced": record("evt_spaced", timestamp="2026-01-01 00:00:00Z"),
    "evt_misnamed": record("evt_elsewhere"),
}
# Stored by the version before the fix (it answered 500 but the blob was written): valid
# RFC 3339, so it is indexed, at its canonical UTC time.
LEGACY = {"evt_lowercase": record("evt_lowercase", timestamp="2026-02-14t20:00:00z")}


__all__ = ["flaky"]  # the fixture: services on a FlakyIndex, local and Azurite


def plant(services: Services, blobs: dict[str, bytes]) -> None:
    for event_id, data in blobs.items():
        services.blobs.write(f"{EVENTS}{event_id}.json", data, Condition.create_only())


def good_events(n: int = 5) -> list[str]:
    client = DirectClient(AGENT_KEY)
    made = [post(client, event(digest=f"Good note {i} on the roadmap."), f"g{i}") for i in range(n)]
    return [m.data["event"]["event_id"] for m in made]


def indexed_ids(services: Services) -> set[str]:
    return {e for _, _, e in services.index.list_event_ids("t1", "u1")}


def test_reindex_indexes_the_good_events_and_reports_the_bad_ones(
    flaky: tuple[Services, FlakyIndex],
):
    services, _ = flaky
    good = good_events()
    services.index.delete("t1", "u1", good)  # a lost index, to be rebuilt
    plant(services, {**BAD, **LEGACY})
    receipt = services.events.reindex(OPERATOR, "t1", "u1")
    assert (receipt.events, receipt.messages) == (12, 1)  # one job holds them all
    report = services.events.drain()
    assert (report.jobs, report.indexed, len(report.skipped)) == (1, 6, len(BAD))
    assert {s.event_id for s in report.skipped} == set(BAD)
    assert all(s.reason for s in report.skipped)
    assert report.as_json()["skipped"] == len(BAD)
    assert indexed_ids(services) == {*good, *LEGACY}
    assert services.queue.count(INDEX_QUEUE) == 0
    (hit,) = services.index.search(EventQuery("t1", "u1", text="planted evt_lowercase"))
    assert hit.timestamp == "2026-02-14T20:00:00Z"


def test_the_queue_trigger_indexes_the_good_events_and_poisons_nothing(
    flaky: tuple[Services, FlakyIndex],
):
    services, _ = flaky
    client = DirectClient(AGENT_KEY)
    good = good_events()
    services.index.delete("t1", "u1", good)
    plant(services, {**BAD, **LEGACY})
    admin = client.as_key("dev-admin-key")
    reindex = admin.request("POST", "/v1/admin/reindex", {"tenant_id": "t1", "user_id": "u1"})
    assert reindex.status == 202 and reindex.data["events"] == 12
    source = PortQueueSource(services.queue, max_dequeue_count=2, retry_delay=0)
    import function_app

    with start_in_thread(function_app.app, route_prefix="", queue_source=source, run_timers=False):
        wait_for(lambda: services.queue.count(INDEX_QUEUE) == 0)
    assert services.queue.count(INDEX_QUEUE + "-poison") == 0
    assert indexed_ids(services) == {*good, *LEGACY}
    assert sorted(ids(search(client, text="roadmap"))) == sorted(good)


def test_an_entry_of_a_blob_that_went_bad_is_removed_not_served(
    flaky: tuple[Services, FlakyIndex],
):
    services, _ = flaky
    (good,) = good_events(1)
    services.blobs.write(f"{EVENTS}{good}.json", b"garbage", Condition.unconditional())
    services.events.reindex(OPERATOR, "t1", "u1")
    report = services.events.drain()
    assert [s.event_id for s in report.skipped] == [good] and report.removed == 1
    assert indexed_ids(services) == set()
    assert search(DirectClient(AGENT_KEY), text="roadmap").status == 200


def test_an_event_the_index_refuses_is_skipped_and_the_rest_of_its_batch_indexed(
    flaky: tuple[Services, FlakyIndex],
):
    services, index = flaky
    good = good_events()
    services.index.delete("t1", "u1", good)
    index.refuse = {good[2]}
    services.events.reindex(OPERATOR, "t1", "u1")
    report = services.events.drain()
    assert [s.event_id for s in report.skipped] == [good[2]]
    assert "refused by the index" in report.skipped[0].reason
    assert indexed_ids(services) == set(good) - {good[2]}


def test_an_index_that_refuses_every_event_fails_the_job_for_a_retry(
    flaky: tuple[Services, FlakyIndex],
):
    services, index = flaky
    good = good_events(3)
    services.index.delete("t1", "u1", good)
    index.fault = StorageError("index not found (test)")
    services.events.reindex(OPERATOR, "t1", "u1")
    with pytest.raises(StorageError):
        services.events.drain()
    index.fault = None
    assert services.queue.count(INDEX_QUEUE) == 1  # still queued, visible again later
