"""Forget one conversation, on both backends: its snapshots, replay records and events
(with index entries) go, what was learned only from it is retracted from every document,
what has other evidence keeps it without the pointer, other conversations are untouched,
each changed document is one audited write (reason ``forget_conversation``), and the
receipt lists what was retracted by path."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memnet import bootstrap
from memnet.bootstrap import Services
from memnet.domain.layout import user_prefix
from memnet.ports import Condition
from tests.api.forgetting import TRANSCRIPT, build, drain_forget, index_ids, names, snapshot_url
from tests.api.test_documents import create
from tests.api.test_events import event, post
from tests.clients import ApiClient, DirectClient
from tests.conftest import ADMIN_KEY, AGENT_KEY, PRIVACY_KEY, STORAGE_BACKENDS, doc_url

USER = "/v1/tenants/t1/users/u1"
URI = "blob://tenants/t1/users/u1/snapshots/{}/s1.json"
C1 = {"snapshot_uri": URI.format("conv-1")}
C2 = {"conversation_id": "conv-2"}
NOW = "2026-11-24T10:00:00Z"
PROJECT = doc_url("projects/alpha.json")


@pytest.fixture(params=STORAGE_BACKENDS)
def services(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Services]:
    yield build(request, tmp_path / "data")
    bootstrap.install(None)


def fact(text: str, evidence: dict[str, Any]) -> dict[str, Any]:
    return {"fact": text, "confidence": 0.9, "evidence": evidence, "last_verified_at": NOW}


def seed(agent: ApiClient) -> None:
    facts = [fact("Likes tea", C1), fact("Lives in Porto", C2)]
    ops = [{"op": "add", "path": "/content/durable_facts/-", "value": f} for f in facts]
    reply = create(agent, doc_url(), ops, "facts", confidence=0.9, evidence={"message_ids": ["m"]})
    assert reply.status == 201, reply.data
    notes = [
        {"note": "Both said so", "evidence": [C1, C2]},
        {"note": "Only conv-1", "evidence": [C1]},
        {"note": "A plain note"},
    ]
    ops = [{"op": "add", "path": "/content/recent_notes/-", "value": n} for n in notes]
    assert create(agent, PROJECT, ops, "notes").status == 201
    posts = [
        event(digest="From conv-1", snapshot_uri=URI.format("conv-1")),
        event(digest="Named conv-1", evidence={"conversation_id": "conv-1"}),
        event(digest="From conv-2", snapshot_uri=URI.format("conv-2")),
    ]
    for n, body in enumerate(posts):
        assert post(agent, body, f"e{n}", USER).status == 201
    for conversation in ("conv-1", "conv-2"):
        url = snapshot_url("t1", "u1", conversation, "s1")
        assert agent.request("PUT", url, TRANSCRIPT).status in (201, 202)


def forget_conversation(client: ApiClient, services: Services, conversation: str) -> dict:
    privacy = client.as_key(PRIVACY_KEY)
    reply = privacy.request("DELETE", f"{USER}/conversations/{conversation}")
    assert reply.status == 202, reply.data
    drain_forget(services)
    status = privacy.request("GET", reply.data["status_url"]).data
    assert status["status"] == "done", status
    return privacy.request("GET", status["receipt_url"]).data


def test_forgetting_a_conversation_removes_it_and_retracts_what_it_taught(
    client: ApiClient, services: Services
):
    agent = client.as_key(AGENT_KEY)
    seed(agent)
    receipt = forget_conversation(client, services, "conv-1")
    left = names(services)
    prefix = user_prefix("t1", "u1")
    assert not [n for n in left if "/conv-1/" in n]
    assert prefix + "snapshots/conv-2/s1.json" in left and prefix + "replays/conv-2/s1.json" in left
    digests = [
        agent.request("GET", f"{USER}/events/{e}").data["digest"] for e in index_ids(services)
    ]
    assert digests == ["From conv-2"]

    facts = agent.request("GET", doc_url()).data["document"]["content"]["durable_facts"]
    assert facts == [fact("Lives in Porto", C2)]
    notes = agent.request("GET", PROJECT).data["document"]["content"]["recent_notes"]
    assert notes == [{"note": "Both said so", "evidence": [C2]}, {"note": "A plain note"}]

    counts = {kind: v["count"] for kind, v in receipt["deleted"].items()}
    assert counts == {"snapshots": 1, "replays": 1, "events": 2}
    retracted = {(r["namespace"], r["path"]): r for r in receipt["retracted"]}
    assert retracted[("user", "user_dynamic.json")]["removed"] == ["/content/durable_facts/0"]
    project = retracted[("projects", "alpha.json")]
    assert project["removed"] == ["/content/recent_notes/1"]
    assert project["kept_without_pointer"] == ["/content/recent_notes/0"]
    assert receipt["conversation_id"] == "conv-1" and "Likes tea" not in str(receipt)


def test_each_changed_document_is_one_audited_write(services: Services):
    agent = DirectClient(AGENT_KEY)
    seed(agent)
    forget_conversation(agent, services, "conv-1")
    admin = DirectClient(ADMIN_KEY)
    for url in (doc_url(), PROJECT):
        changes = admin.request("GET", url + ":history").data["changes"]
        assert [c["reason"] for c in changes] == ["forget_conversation", "live_update"]
        assert changes[0]["actor"] == "memnet-forget"


def test_the_user_keeps_writing_and_another_conversation_is_untouched(services: Services):
    agent = DirectClient(AGENT_KEY)
    seed(agent)
    receipt = forget_conversation(agent, services, "conv-9")
    assert receipt["deleted"] == {} and receipt["retracted"] == []
    facts = agent.request("GET", doc_url()).data["document"]["content"]["durable_facts"]
    assert len(facts) == 2 and len(index_ids(services)) == 3
    assert post(agent, event(digest="Still here"), "after", USER).status == 201


def test_only_the_forget_role_may_forget_a_conversation(services: Services):
    url = f"{USER}/conversations/conv-1"
    assert DirectClient(AGENT_KEY).request("DELETE", url).error_code == "ROLE_FORBIDDEN"
    assert DirectClient(ADMIN_KEY).request("DELETE", url).status == 403
    bad = DirectClient(PRIVACY_KEY).request("DELETE", f"{USER}/conversations/_x")
    assert bad.status == 400 and bad.error_code == "INVALID_IDENTIFIER"
    missing = DirectClient(ADMIN_KEY).request("GET", f"{USER}/forget/conversations/conv-1")
    assert missing.error_code == "FORGET_NOT_FOUND"


def test_a_held_kind_is_kept_by_a_conversation_forget(services: Services):
    agent = DirectClient(AGENT_KEY)
    seed(agent)
    hold = {"reason": "Case 9", "kinds": ["documents", "snapshots"]}
    assert DirectClient(ADMIN_KEY).request("PUT", "/v1/admin/tenants/t1/hold", hold).status == 200
    receipt = forget_conversation(agent, services, "conv-1")
    kept = {"documents", "snapshots", "audit"}  # a held document keeps its history
    assert set(receipt["kept"]) == kept and receipt["retracted"] == []
    assert user_prefix("t1", "u1") + "snapshots/conv-1/s1.json" in names(services)
    assert "snapshots" not in receipt["deleted"] and receipt["deleted"]["events"]["count"] == 2


def test_events_far_past_the_first_pages_are_still_found(services):
    """The event scan goes on through pages that name other conversations only (page
    size 3 here): 70 unrelated events sort before the conversation's one."""
    agent = DirectClient(AGENT_KEY)
    for n in range(70):
        assert (
            post(agent, event(digest=f"other {n}", event_id=f"a{n:03d}"), f"k{n}", USER).status
            == 201
        )
    late = event(digest="From conv-1", snapshot_uri=URI.format("conv-1"), event_id="z-conv1")
    assert post(agent, late, "kz", USER).status == 201
    assert DirectClient(PRIVACY_KEY).request("DELETE", USER + "/conversations/conv-1").status == 202
    drain_forget(services)
    left = names(services)
    assert not [n for n in left if n.endswith("/z-conv1.json")]
    assert len([n for n in left if "/events/" in n]) == 70
    assert "z-conv1" not in index_ids(services)


def test_a_digest_whose_sources_name_the_conversation_goes_with_it(services):
    """A compaction digest lists the evidence of the items it holds under ``sources``."""
    agent = DirectClient(AGENT_KEY)
    digest = event(
        digest="Compacted: likes tea",
        event_id="evt_cmp_1",
        evidence={"document": {"path": "user_dynamic.json"}, "sources": [C2, C1]},
    )
    assert post(agent, digest, "kd", USER).status == 201
    assert DirectClient(PRIVACY_KEY).request("DELETE", USER + "/conversations/conv-1").status == 202
    drain_forget(services)
    assert not [n for n in names(services) if n.endswith("/evt_cmp_1.json")]


def test_a_document_no_profile_binds_is_reported_not_retracted_and_the_job_ends(services):
    """A write no retry can fix is recorded in the receipt instead of failing the job."""
    stray = user_prefix("t1", "u1") + "documents/misc/stray.json"
    body = {"doc_id": "d", "schema_id": "nobody.binds.this", "schema_version": "1.0.0"}
    body["content"] = {"items": [{"text": "From conv-1", "evidence": C1}]}
    services.blobs.write(stray, json.dumps(body).encode(), Condition.create_only())
    receipt = forget_conversation(DirectClient(AGENT_KEY), services, "conv-1")
    assert receipt["not_retracted"] == [
        {"namespace": "misc", "path": "stray.json", "code": "BINDING_NOT_FOUND"}
    ]
