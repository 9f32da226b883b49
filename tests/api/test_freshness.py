"""Freshness through the real services on both backends (issue 11, item 2; spec 22.3):
stale facts go to the pending section in their own audited change, and a write that
confirms one brings it back."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from memnet.bootstrap import Services
from memnet.domain.freshness import FRESHNESS_CALLER
from memnet.domain.timestamps import format_millis
from tests.api.compacting import DYNAMIC, PROOF, content, history, patch, put

STALE = {**PROOF, "fact": "Lives in Bergen.", "last_verified_at": "2024-01-01T00:00:00Z"}
EXPIRED = {**PROOF, "fact": "Is on leave.", "last_verified_at": "2026-11-01T00:00:00Z",
           "expires_at": "2026-11-02T00:00:00Z"}  # fmt: skip
FRESH = {**PROOF, "fact": "Works in Oslo.", "last_verified_at": "2099-01-01T00:00:00Z"}


def dynamic(facts: list[dict[str, Any]]) -> dict[str, Any]:
    return {"preferences": [], "durable_facts": facts, "pending_confirmations": [],
            "projects_index": []}  # fmt: skip


def run(services: Services) -> dict[str, Any]:
    return services.compaction.compact("t1", "u1", "user", "user_dynamic.json").as_json()


def test_stale_facts_are_downgraded_to_pending_in_one_audited_change(services: Services):
    put(services, DYNAMIC, dynamic([STALE, FRESH, EXPIRED]))
    status = run(services)["freshness"]
    assert status["changed"]
    assert status["why"] == {
        "/content/durable_facts/0": "max_age",
        "/content/durable_facts/2": "expired",
    }
    after = content(services, DYNAMIC)
    assert after["durable_facts"] == [FRESH]
    proposals = after["pending_confirmations"]
    assert [p["candidate"] for p in proposals] == [STALE, EXPIRED]
    assert {(p["target_path"], p["op"], p["proposed_by"]) for p in proposals} == {
        ("/durable_facts/-", "add", FRESHNESS_CALLER)
    }
    head = history(services, DYNAMIC)[0]
    assert (head["reason"], head["actor"], head["change_id"]) == (
        "freshness_downgrade",
        FRESHNESS_CALLER,
        status["change_id"],
    )
    assert head["reason_codes"] == ["expired", "max_age"]
    assert not run(services)["freshness"]["changed"]  # a rerun finds nothing stale


def test_a_write_that_confirms_a_downgraded_fact_restores_it(services: Services):
    put(services, DYNAMIC, dynamic([STALE, FRESH]))
    run(services)
    confirmed = {**STALE, "fact": "lives in Bergen", "last_verified_at": "2026-11-20T00:00:00Z"}
    add = [{"op": "add", "path": "/content/durable_facts/-", "value": confirmed}]
    patch(services, DYNAMIC, add, **PROOF)
    after = content(services, DYNAMIC)
    assert after["durable_facts"] == [FRESH, confirmed]
    assert after["pending_confirmations"] == []  # back, and not also pending
    ops = history(services, DYNAMIC)[0]["ops"]
    assert ops[-1] == {"op": "remove", "path": "/content/pending_confirmations/0"}


def test_a_low_confidence_write_does_not_restore(services: Services):
    put(services, DYNAMIC, dynamic([STALE]))
    run(services)
    add = [{"op": "add", "path": "/content/durable_facts/-", "value": STALE}]
    reply = patch(services, DYNAMIC, add, confidence=0.75, evidence={"message_ids": ["m2"]})
    assert reply.body["redirected_ops"]
    after = content(services, DYNAMIC)
    assert after["durable_facts"] == []
    assert [p["proposed_by"] for p in after["pending_confirmations"]] == [FRESHNESS_CALLER, "agent"]


def test_a_fact_class_decides_its_age_and_expires_at_always_applies(services: Services):
    now = datetime.now(UTC)

    def ago(days: int) -> str:
        return format_millis(now - timedelta(days=days))

    long_ = {**PROOF, "fact": "Prefers tea.", "last_verified_at": ago(400), "ttl_class": "long"}
    forever = {**PROOF, "fact": "Born in Oslo.", "last_verified_at": ago(4000),
               "ttl_class": "permanent"}  # fmt: skip
    classless = {**PROOF, "fact": "Plays chess.", "last_verified_at": ago(400)}
    ended = {**forever, "fact": "Owns a boat.", "expires_at": ago(1)}
    put(services, DYNAMIC, dynamic([long_, forever, classless, ended]))
    status = run(services)["freshness"]
    assert status["why"] == {  # max_age_days (365) holds only for the fact without a class
        "/content/durable_facts/2": "max_age",
        "/content/durable_facts/3": "expired",
    }
    assert content(services, DYNAMIC)["durable_facts"] == [long_, forever]
