"""Compaction through the real services on both backends (issue 11, item 1): one audited
change, trimmed items in an event digest that points back, idempotent reruns, durable
facts kept, live writers racing it, and both triggers."""

from __future__ import annotations

import json
import threading
import time

from memnet import bootstrap
from memnet.api.workers import handle_compaction_job
from memnet.bootstrap import Services
from memnet.domain.retraction import points_at
from memnet.services.compaction.service import COMPACT_QUEUE, COMPACTION_CALLER
from memnet.services.events.records import event_name
from tests.api.compacting import (
    DYNAMIC,
    PROJECT,
    PROOF,
    content,
    history,
    notes,
    patch,
    project,
    put,
)


def compact(services: Services, ref=PROJECT, **kw):  # type: ignore[no-untyped-def]
    return services.compaction.compact(
        ref.tenant_id, ref.user_id, ref.namespace, ref.path, **kw
    ).as_json()


def test_a_document_over_its_targets_is_compacted_in_one_audited_change(services: Services):
    old = notes(40)
    put(services, PROJECT, project([*old, dict(old[5]), {"note": "A note."}, {"note": "a NOTE!"}]))
    before = len(history(services, PROJECT))
    status = compact(services)
    assert status["changed"] and status["within_targets"] and status["why_not"] == []
    assert status["reason_codes"] == ["merge_duplicate", "move_to_events", "trim"]
    kept = content(services, PROJECT)["recent_notes"]
    assert kept == old[10:]  # the duplicates merged, the oldest (a note without time) trimmed
    records = history(services, PROJECT)
    assert len(records) == before + 1
    head = records[0]
    assert (head["reason"], head["actor"], head["change_id"]) == (
        "compaction",
        COMPACTION_CALLER,
        status["change_id"],
    )
    assert head["reason_codes"] == status["reason_codes"]
    assert head["evidence"] == {"job": "compaction", "base_change_id": records[1]["change_id"]}


def test_trimmed_items_are_in_one_event_digest_pointing_back(services: Services):
    old = notes(33)
    put(services, PROJECT, project(old))
    base = history(services, PROJECT)[0]["change_id"]
    status = compact(services)
    event = services.events.get(_admin(), "t1", "u1", status["event_id"]).as_json()
    assert event["service_id"] == COMPACTION_CALLER and event["source_type"] == "compaction"
    assert all(n["note"] in event["digest"] for n in old[:3])
    assert event["evidence"] == {
        "tenant_id": "t1",
        "user_id": "u1",
        "namespace": "projects",
        "path": "apollo.json",
        "base_change_id": base,
        "removed_paths": [
            "/content/recent_notes/0",
            "/content/recent_notes/1",
            "/content/recent_notes/2",
        ],
        "sources": [],
        "sources_count": 0,
        "removed_count": 3,
    }
    assert event["project_ids"] == ["apollo"]
    assert event.get("snapshot_uri") is None


SNAP = "blob://tenants/t1/users/u1/snapshots/conv-a/s1.json"


def test_a_digest_carries_the_removed_items_evidence(services: Services):
    proof = {"conversation_id": "conv-a", "snapshot_uri": SNAP, "message_ids": ["m1"]}
    old = [{**n, "evidence": proof} for n in notes(32)]
    old[1]["evidence"] = [proof, {"conversation_id": "conv-a", "message_ids": ["m2"]}]
    put(services, PROJECT, project(old))
    status = compact(services)
    event = services.events.get(_admin(), "t1", "u1", status["event_id"]).as_json()
    assert event["evidence"]["sources"] == [
        proof,
        {"conversation_id": "conv-a", "message_ids": ["m2"]},
    ]
    assert event["evidence"]["sources_count"] == 2
    assert event["snapshot_uri"] == SNAP  # every removed item names that one snapshot
    assert old[1]["note"] in event["digest"]
    # forgetting conv-a finds the digest by its sources (and not by another conversation)
    name = event_name("t1", "u1", status["event_id"])
    scan = services.forget_conversation._names_conversation  # the events phase's matcher
    assert scan(name, points_at("t1", "u1", "conv-a"))
    assert not scan(name, points_at("t1", "u1", "conv-b"))


def test_a_digest_of_many_sources_stays_a_valid_event(services: Services):
    from memnet.domain.compaction import Removed
    from memnet.domain.event_model import parse_event
    from memnet.services.compaction.digest import Target, digest_event

    profile = services.registry.get("project-copilot-v1")
    assert profile is not None
    found = profile.resolve(PROJECT.namespace, PROJECT.path)
    assert found is not None
    moved = [
        Removed(
            f"/content/recent_notes/{i}",
            {"note": f"n{i}", "evidence": {"conversation_id": f"c{i}", "message_ids": ["m" * 100]}},
            "trim",
            True,
        )
        for i in range(80)
    ]
    base = "chg_019ab0000000" + "0" * 20
    event = digest_event(Target(PROJECT, profile, found[0]), base, moved).as_json()
    evidence = event["evidence"]
    assert evidence["sources_count"] == 80 and evidence["removed_count"] == 80
    assert 0 < len(evidence["sources"]) <= 50
    assert all(set(s) == {"conversation_id"} for s in evidence["sources"])  # cut to identity
    assert evidence["sources"][0] == {"conversation_id": "c0"}
    assert "snapshot_uri" not in event  # the items name no snapshot
    assert parse_event(event, "t1", "u1", COMPACTION_CALLER)["evidence"] == evidence


def test_an_idempotent_rerun_writes_nothing_new(services: Services):
    put(services, PROJECT, project(notes(35)))
    first = compact(services)
    records = history(services, PROJECT)
    again = compact(services)
    assert first["changed"] and not again["changed"] and again["within_targets"]
    assert history(services, PROJECT) == records


def test_a_dry_run_reports_the_plan_and_writes_nothing(services: Services):
    put(services, PROJECT, project(notes(32)))
    records = history(services, PROJECT)
    status = compact(services, dry_run=True)
    assert status["dry_run"] and not status["changed"] and len(status["ops"]) == 2
    assert history(services, PROJECT) == records


def test_durable_facts_at_the_threshold_are_kept_and_the_status_says_why(services: Services):
    facts = [_fact(f"fact {i} {'x' * i}", 0.9) for i in range(82)] + [_fact("weak", 0.5)]
    put(services, DYNAMIC, _dynamic(facts))
    status = compact(services, DYNAMIC)
    left = content(services, DYNAMIC)["durable_facts"]
    assert status["changed"] and len(left) == 82 and _fact("weak", 0.5) not in left
    assert not status["within_targets"]
    assert status["why_not"] == [
        "/durable_facts: 82 items, over its max_items 80, are all protected durable facts"
    ]


def test_live_writers_during_compaction_lose_nothing(services: Services):
    put(services, PROJECT, project(notes(40)))
    fresh = [notes(5, year=2027, prefix=f"writer{w}") for w in range(3)]

    def writer(mine: list[dict[str, str]]) -> None:
        for item in mine:
            patch(
                services,
                PROJECT,
                [{"op": "add", "path": "/content/recent_notes/-", "value": item}],
            )

    threads = [threading.Thread(target=writer, args=(mine,)) for mine in fresh]
    for thread in threads:
        thread.start()
    statuses = [compact(services) for _ in range(3)]
    for thread in threads:
        thread.join()
    final = compact(services)
    kept = content(services, PROJECT)["recent_notes"]
    assert all(item in kept for mine in fresh for item in mine)  # no lost update
    assert len(kept) == 30 and final["within_targets"]
    assert any(s["changed"] or s.get("yielded") for s in [*statuses, final])


def test_a_write_that_crosses_the_targets_queues_a_compaction(services: Services):
    put(services, PROJECT, project(notes(30)))
    item = notes(1, year=2027)[0]
    patch(
        services,
        PROJECT,
        [{"op": "add", "path": "/content/recent_notes/-", "value": item}],
    )
    messages = services.queue.receive(COMPACT_QUEUE)
    assert [json.loads(m.body) for m in messages] == [
        {"tenant_id": "t1", "user_id": "u1", "namespace": "projects", "path": "apollo.json"}
    ]
    status = handle_compaction_job(bootstrap.services(), messages[0].body)
    assert status["changed"] and len(content(services, PROJECT)["recent_notes"]) == 30
    patch(services, PROJECT, [{"op": "add", "path": "/content/summary", "value": "A"}])
    assert services.queue.receive(COMPACT_QUEUE) == []  # within targets: nothing queued


def test_the_timer_compacts_every_document_over_its_targets(services: Services):
    put(services, PROJECT, project(notes(31)))
    put(services, DYNAMIC, _dynamic([]))
    report = services.compaction.run_timer().as_json()
    assert report["pass_complete"] and report["changed"] == [
        "tenants/t1/users/u1/documents/projects/apollo.json"
    ]


def _fact(text: str, confidence: float) -> dict[str, object]:
    return {
        **PROOF,
        "fact": text,
        "confidence": confidence,
        "last_verified_at": "2026-11-01T00:00:00Z",
    }


def _dynamic(facts: list[dict[str, object]]) -> dict[str, object]:
    return {
        "preferences": [],
        "durable_facts": facts,
        "pending_confirmations": [],
        "projects_index": [],
    }


def _admin():  # type: ignore[no-untyped-def]
    from tests.api.compacting import AGENT

    return AGENT


def test_compact_names_visits_documents_only(services: Services):
    put(services, PROJECT, project(notes(31)))
    names = [
        "tenants/t1/users/u1/events/evt_x.json",
        "tenants/t1/users/u1/documents/projects/apollo.json",
        "tenants/t1/users/u1/documents/projects/missing.json",
    ]
    statuses = [
        s.as_json() for s in services.compaction.compact_names(names, time.monotonic() + 60)
    ]
    assert [(s["name"].rsplit("/", 1)[1], s["changed"]) for s in statuses] == [
        ("apollo.json", True),
        ("missing.json", False),
    ]
    assert statuses[1]["why_not"] == ["no such document"]


def test_the_function_app_wires_the_timer_and_the_queue(services: Services):
    import function_app
    from funchost import functions_of
    from funchost.background import fire_timer
    from funchost.schedule import parse_ncrontab

    functions = functions_of(function_app.app)
    timer = {t.name: t for t in functions.timer_functions}["compaction_timer"]
    assert timer.schedule == "%MEMNET_COMPACTION_SCHEDULE%"
    assert parse_ncrontab("0 5 3 * * *") is not None  # the default funchost sets
    queues = {q.name: q.queue_name for q in functions.queue_functions}
    assert queues["compaction_worker"] == COMPACT_QUEUE
    put(services, PROJECT, project(notes(31)))
    fire_timer(timer, past_due=False)
    assert len(content(services, PROJECT)["recent_notes"]) == 30


def test_a_failed_enqueue_never_fails_the_write(services: Services, monkeypatch, caplog):  # type: ignore[no-untyped-def]
    def unavailable(*args: object, **kwargs: object) -> str:
        raise ConnectionError("queue down")

    put(services, PROJECT, project(notes(30)))
    monkeypatch.setattr(services.queue, "send", unavailable)
    item = notes(1, year=2027)[0]
    reply = patch(
        services,
        PROJECT,
        [{"op": "add", "path": "/content/recent_notes/-", "value": item}],
    )
    assert reply.body["etag"] and item in content(services, PROJECT)["recent_notes"]
    assert "after-commit hook failed" in caplog.text
