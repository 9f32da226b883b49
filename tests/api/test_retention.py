"""Retention sweeps (issue 11 item 3; docs/retention.md) on both backends: each kind
expires at its rule, ceilings and the audit floor apply, holds keep data, sweeps resume
and yield to each other, a dry run deletes nothing, and history survives audit expiry.

Time is a fake clock handed to the service; ``last_modified`` is real wall time, so the
tests move the clock days ahead of the blobs they wrote."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memnet import bootstrap
from memnet.bootstrap import Services
from memnet.domain.layout import (
    SnapshotRef,
    audit_horizon_name,
    forget_job_name,
    sweep_state_name,
    user_prefix,
)
from memnet.ports import Condition
from memnet.services.governance.walker import Walker
from tests.api.test_documents import PREF, create, patch
from tests.api.test_events import event, post
from tests.clients import DirectClient
from tests.conftest import AGENT_KEY, STORAGE_BACKENDS, backend_settings, doc_url

USER = user_prefix("t1", "u1")


class Clock:
    def __init__(self) -> None:
        self.moment = datetime.now(UTC)

    def now(self) -> datetime:
        return self.moment

    def advance(self, **delta: float) -> None:
        self.moment += timedelta(**delta)


@dataclass
class World:
    services: Services
    clock: Clock
    client: DirectClient
    start: datetime = datetime.min

    def names(self, kind: str = "") -> list[str]:
        return list(self.services.blobs.list_names(USER + kind))

    def sweep(self, **options: Any) -> dict[str, Any]:
        return self.services.retention.sweep(**options).as_json()

    def at_day(self, days: float) -> None:
        """Move the clock to ``days`` after the world was built (the data's writing)."""
        self.clock.moment = self.start + timedelta(days=days)

    def mark_start(self) -> None:
        self.start = self.clock.moment


Start = Callable[..., World]


@pytest.fixture(params=STORAGE_BACKENDS)
def start(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Start]:
    """Build the service with a fake clock and settings overrides (a retention file as a
    dict under ``ceilings``); a second call over the same storage is a second instance."""
    settings = backend_settings(request, request.param, tmp_path / "data")
    clock = Clock()

    def build(ceilings: dict[str, Any] | None = None, **overrides: Any) -> World:
        if ceilings is not None:
            path = tmp_path / "retention.json"
            path.write_text(json.dumps(ceilings))
            overrides["retention_file"] = path
        built = bootstrap.build(replace(settings, **overrides), clock=clock)
        bootstrap.install(built)
        world = World(built, clock, DirectClient(AGENT_KEY))
        world.mark_start()
        return world

    yield build
    bootstrap.install(None)


def populate(world: World) -> str:
    """Three document changes, two events (indexed), one snapshot and its replay record,
    and the idempotency records of those writes; returns the document's ETag."""
    client = world.client
    etag = create(client).data["etag"]
    for i in range(2):
        reply = patch(
            client, etag, [{"op": "add", "path": PREF, "value": {"text": f"p{i}"}}], f"k{i}"
        )
        etag = reply.data["etag"]
    for i in range(2):
        assert post(client, event(digest=f"digest {i}"), f"e{i}").status in (200, 201)
    world.services.events.drain()
    ref = SnapshotRef("t1", "u1", "c1", "s1")
    for name in (ref.blob_name, ref.replay_name):
        world.services.blobs.write(name, b"{}", Condition.create_only())
    return str(etag)


def kinds(world: World) -> dict[str, int]:
    found: dict[str, int] = {}
    for name in world.names():
        kind = name[len(USER) :].split("/")[0]
        found[kind] = found.get(kind, 0) + 1
    return found


def indexed(world: World) -> int:
    return len(list(world.services.index.list_event_ids("t1", "u1")))


def test_each_kind_expires_at_its_rule_and_documents_stay(start: Start) -> None:
    world = start()
    populate(world)
    assert kinds(world) == {
        "documents": 1,
        "audit": 3,
        "idempotency": 5,
        "events": 2,
        "snapshots": 1,
        "replays": 1,
    }
    world.at_day(0.5)
    assert world.sweep()["counts"] == {}
    world.at_day(1.01)  # idempotency: TTL one day plus the lease
    assert world.sweep()["counts"] == {"idempotency": {"deleted": 5}}
    world.at_day(59)
    world.sweep()
    assert "snapshots" in kinds(world)
    world.at_day(61)  # snapshots 60 days; replay records follow the snapshot rule
    counts = world.sweep()["counts"]  # a replay record goes after its snapshot
    assert counts == {"snapshots": {"deleted": 1}, "replays": {"kept_with_snapshot": 1}}
    assert world.sweep()["counts"] == {"replays": {"deleted": 1}}
    world.at_day(364)
    world.sweep()
    assert indexed(world) == 2
    world.at_day(366)  # events and audit 365 days
    counts = world.sweep()["counts"]
    assert counts == {"events": {"deleted": 2}, "audit": {"deleted": 3}}
    assert kinds(world) == {"documents": 1, "audit_horizon.json": 1}
    assert indexed(world) == 0


def test_history_after_audit_expiry_reads_the_retained_part_and_patches_still_work(
    start: Start,
) -> None:
    world = start()
    etag = populate(world)
    world.at_day(400)
    world.sweep()
    page = world.client.request("GET", doc_url() + ":history").data
    assert (page["changes"], page.get("truncated")) == ([], True)
    first = patch(
        world.client, etag, [{"op": "add", "path": PREF, "value": {"text": "new"}}], "late"
    )
    assert first.status == 200, first.data
    rebased = world.client.request(
        "PATCH",
        doc_url(),
        {"ops": [{"op": "add", "path": PREF, "value": {"text": "rebased"}}], "rebase": True},
        {"If-Match": etag, "Idempotency-Key": "late-2"},
    )
    assert rebased.status == 200, rebased.data
    page = world.client.request("GET", doc_url() + ":history").data
    assert [c["idempotency_key_sha256"] is not None for c in page["changes"]] == [True, True]
    assert page["truncated"] is True
    prefs = rebased.data["document"]["content"]["preferences"]
    assert prefs[-2:] == [{"text": "new"}, {"text": "rebased"}]


def test_a_rebase_onto_a_version_past_the_horizon_is_refused(start: Start) -> None:
    world = start()
    client = world.client
    old = create(client).data["etag"]
    etag = patch(client, old, [{"op": "add", "path": PREF, "value": {"text": "x"}}], "k").data[
        "etag"
    ]
    world.at_day(400)
    world.sweep()
    reply = client.request(
        "PATCH",
        doc_url(),
        {"ops": [{"op": "add", "path": PREF, "value": {"text": "y"}}], "rebase": True},
        {"If-Match": old, "Idempotency-Key": "late"},
    )
    assert reply.status == 412 and reply.data["error"]["details"]["latest_etag"] == etag


def test_tenant_ceiling_is_stricter_and_the_audit_floor_beats_it(start: Start) -> None:
    ceilings = {"tenants": {"t1": {"events_days": 10, "audit_days": 1, "snapshots_days": 2}}}
    world = start(ceilings, audit_floor_days=30)
    populate(world)
    world.at_day(11)
    counts = world.sweep()["counts"]
    assert counts["events"] == {"deleted": 2}
    assert counts["snapshots"] == {"deleted": 1}
    assert counts["replays"] == {"kept_with_snapshot": 1}
    assert "audit" not in counts  # the floor: 30 days, not the ceiling's 1
    world.at_day(31)
    assert world.sweep()["counts"] == {"audit": {"deleted": 3}, "replays": {"deleted": 1}}


def test_a_user_being_forgotten_is_left_to_the_forget_job(start: Start) -> None:
    """The sweep does not race a running forget (an audit horizon it raised could
    recreate a blob under the prefix being emptied)."""
    world = start()
    populate(world)
    job = {"status": "running", "forget_id": "fgt_x"}
    name = forget_job_name("t1", "u1")
    world.services.blobs.write(name, json.dumps(job).encode(), Condition.create_only())
    world.at_day(400)
    counts = world.sweep()["counts"]
    assert counts["events"] == {"left_to_forget": 2}
    assert counts["audit"] == {"left_to_forget": 3}
    assert audit_horizon_name("t1", "u1") not in world.names()


def test_held_kinds_are_kept_and_counted(start: Start) -> None:
    world = start()
    populate(world)
    hold = {"reason": "litigation", "kinds": ["events", "snapshots"]}
    world.services.holds.set("t1", "u1", hold, "admin")
    world.at_day(400)
    counts = world.sweep()["counts"]
    assert counts["events"] == {"kept_by_hold": 2}
    assert counts["snapshots"] == {"kept_by_hold": 1}
    assert counts["audit"] == {"deleted": 3}
    assert counts["replays"] == {"kept_with_snapshot": 1}  # its snapshot is held
    assert indexed(world) == 2
    world.services.holds.clear("t1", "u1", "admin")
    assert world.sweep()["counts"]["events"] == {"deleted": 2}


def test_a_dry_run_lists_what_it_would_delete_and_deletes_nothing(start: Start) -> None:
    world = start()
    populate(world)
    before = world.names()
    world.at_day(400)
    report = world.sweep(dry_run=True)
    assert report["counts"]["audit"] == {"would_delete": 3}
    assert report["counts"]["idempotency"] == {"would_delete": 5}
    assert report["counts"]["replays"] == {"kept_with_snapshot": 1}
    assert len(report["would_delete_names"]) == 3 + 5 + 2 + 1
    assert not any("/documents/" in name for name in report["would_delete_names"])
    assert world.names() == before and indexed(world) == 2
    assert world.services.retention.walker.state() is None  # no place saved, no lease
    limited = world.sweep(dry_run=True, limit=4)
    assert limited["visited"] == 4 and not limited["pass_complete"]


def test_a_sweep_bounded_by_time_and_page_size_resumes_and_finishes(start: Start) -> None:
    world = start(sweep_page_size=2)
    populate(world)
    world.at_day(400)
    runs = []
    while not runs or not runs[-1]["pass_complete"]:
        runs.append(world.sweep(max_seconds=0))  # one page per run
        assert len(runs) < 50
    assert len(runs) >= 7 and all(r["pages"] == 1 for r in runs)
    assert all(r["continuation"] for r in runs[:-1]) and runs[-1]["continuation"] is None
    assert kinds(world) == {"documents": 1, "audit_horizon.json": 1, "replays": 1}
    state = world.services.retention.walker.state()
    assert state is not None and state.passes_completed == 1
    assert world.sweep(max_seconds=0)["visited"] == 2  # a new pass, from the beginning


def test_a_second_instance_yields_while_the_first_holds_the_lease(start: Start) -> None:
    world = start(sweep_page_size=1)
    populate(world)
    other = start(sweep_page_size=1)  # another process over the same storage
    world.at_day(400)
    seen: list[dict[str, Any]] = []
    walker = Walker(world.services.blobs, world.clock, "retention", page_size=1)
    walker.run(lambda items: seen.append(other.sweep()), max_seconds=0)
    assert seen[0]["yielded"] is True and seen[0]["counts"] == {}
    world.clock.advance(seconds=400)  # the lease of a vanished instance lapses
    assert other.sweep(max_seconds=0)["yielded"] is False


def test_two_instances_sweeping_at_once_delete_everything_due_once(start: Start) -> None:
    world = start(sweep_page_size=1)
    populate(world)
    instances = [world, start(sweep_page_size=1)]
    world.at_day(400)
    reports: list[dict[str, Any]] = []
    errors: list[BaseException] = []

    def run(instance: World) -> None:
        try:
            # Two passes (a replay record goes one pass after its snapshot); yields to
            # the other instance's lease may take many runs on a loaded machine.
            for _ in range(400):
                reports.append(instance.sweep(max_seconds=0))
                if sum(r["pass_complete"] for r in list(reports)) >= 2:
                    return
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in instances]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert any(r["pass_complete"] for r in reports)
    assert kinds(world) == {"documents": 1, "audit_horizon.json": 1}
    deleted = sum(c.get("deleted", 0) for r in reports for c in r["counts"].values())
    assert deleted == 3 + 5 + 2 + 1 + 1
    assert world.services.blobs.read(sweep_state_name("retention"))


def test_the_timer_handler_runs_one_sweep(start: Start) -> None:
    from memnet.api.workers import handle_retention_sweep

    world = start()
    populate(world)
    world.at_day(2)
    report = handle_retention_sweep(bootstrap.services())
    assert report["counts"] == {"idempotency": {"deleted": 5}}
    assert report["pass_complete"] is True
