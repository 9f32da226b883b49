"""a2p's proposal lifecycle (its memory specification, "Proposals") through the Python
client on a2p-v1 (docs/related/a2p.md): an agent proposes memories of the three types in
a2p: and ext: categories, the user's app reviews them (approve, approve with edits,
reject, and one left to expire), then merges two approved memories with
``consolidatedFrom`` provenance. The merge is the user's own audited write: the generic
consolidation capability (issue 15, capability 6) is not built yet."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from memnet_client import Conflict, MemnetClient

from tests.related.conftest import A2P_AGENT_KEY, A2P_USER_KEY, World, connect

EVIDENCE = {"conversation_id": "sess_xyz", "message_ids": ["m4"]}


@pytest.fixture
def agent(http_server: str, related: World) -> Iterator[MemnetClient]:
    with connect(http_server, A2P_AGENT_KEY, "alice") as client:
        yield client


@pytest.fixture
def user(http_server: str, related: World) -> Iterator[MemnetClient]:
    with connect(http_server, A2P_USER_KEY, "alice") as client:
        yield client


def memory(memory_id: str, content: str, category: str) -> dict[str, Any]:
    return {"id": memory_id, "content": content, "category": category, "confidence": 0.85}


def propose(agent: MemnetClient, kind: str, value: dict[str, Any]) -> None:
    op = {"op": "add", "path": f"/content/memories/a2p:{kind}/-", "value": value}
    written = agent.update(
        "a2p", "memories.json", lambda _: [op], confidence=0.85, evidence=EVIDENCE
    )
    assert written.raw["redirected_ops"][0]["reason"] == "review_required"


def by_content(user: MemnetClient) -> dict[str, str]:
    return {p["item"]["candidate"]["content"]: p["proposal_id"] for p in user.list_proposals()}


def test_an_agent_proposes_and_the_user_decides(
    agent: MemnetClient, user: MemnetClient, related: World
):
    propose(agent, "semantic", memory("mem_1", "Likes jazz music", "a2p:interests.music"))
    propose(agent, "semantic", memory("mem_2", "Enjoys electronic music", "a2p:interests.music"))
    propose(
        agent,
        "procedural",
        memory("mem_3", "Always asks for pros/cons", "a2p:preferences.communication"),
    )
    propose(
        agent,
        "episodic",
        memory("mem_4", "Asked about Rust on 2026-01-15", "ext:github:coding.style"),
    )
    propose(agent, "semantic", memory("mem_5", "Prefers dark mode", "a2p:preferences.ui"))
    queue = by_content(user)
    assert len(queue) == 5
    assert {p["status"] for p in user.list_proposals()} == {"pending"}

    # Approve, approve with edits, reject.
    assert user.review_proposal(queue["Likes jazz music"], "approve")["status"] == "approved"
    edited = memory("mem_2", "Enjoys electronic music, mostly techno", "a2p:interests.music")
    assert (
        user.review_proposal(queue["Enjoys electronic music"], "edit", candidate=edited)["status"]
        == "edited"
    )
    assert (
        user.review_proposal(queue["Asked about Rust on 2026-01-15"], "reject")["status"]
        == "rejected"
    )
    assert (
        user.review_proposal(queue["Always asks for pros/cons"], "approve")["status"] == "approved"
    )

    # The agent cannot review; the last proposal is left alone and expires after 7 days.
    with pytest.raises(Exception) as refused:
        agent.review_proposal(queue["Prefers dark mode"], "approve")
    assert getattr(refused.value, "code", None) == "ROLE_FORBIDDEN"
    related.clock.advance(7 * 86400)
    (late,) = user.list_proposals()
    assert late["status"] == "expired"
    with pytest.raises(Conflict) as expired:
        user.review_proposal(late["proposal_id"], "approve")
    assert expired.value.code == "PROPOSAL_EXPIRED"

    memories = user.get_document("a2p", "memories.json").content["memories"]
    assert [m["content"] for m in memories["a2p:semantic"]] == [
        "Likes jazz music",
        "Enjoys electronic music, mostly techno",
    ]
    assert [m["id"] for m in memories["a2p:procedural"]] == ["mem_3"]
    assert memories["a2p:episodic"] == []

    # Consolidation: the two music memories become one with its provenance.
    merged = {
        **memory("mem_6", "Music preferences: jazz, electronic", "a2p:interests.music"),
        "consolidatedFrom": ["mem_1", "mem_2"],
    }
    ops = [
        {"op": "remove", "path": "/content/memories/a2p:semantic/1"},
        {"op": "remove", "path": "/content/memories/a2p:semantic/0"},
        {"op": "add", "path": "/content/memories/a2p:semantic/-", "value": merged},
    ]
    user.update(
        "a2p", "memories.json", lambda _: ops, confidence=1.0, evidence={"consolidated": True}
    )
    semantic = user.get_document("a2p", "memories.json").content["memories"]["a2p:semantic"]
    assert semantic == [merged]

    # Every decision is in the history, with who decided and who proposed.
    changes = user.get_history("a2p", "memories.json", limit=20).raw["changes"]
    decisions = [
        c["origin"]["review"]["status"] for c in changes if "review" in (c.get("origin") or {})
    ]
    assert sorted(decisions) == ["approved", "approved", "edited", "rejected"]
    assert {c["origin"]["review"]["proposed_by"] for c in changes if c.get("origin")} == {
        "a2p-agent"
    }


def test_compaction_consolidates_duplicate_memories_with_their_provenance(
    agent: MemnetClient, user: MemnetClient, related: World
):
    for n, text in (
        (1, "Prefers TypeScript for new projects."),
        (2, "prefers typescript for new projects"),
    ):
        propose(agent, "semantic", memory(f"mem_{n}", text, "a2p:professional.preferences"))
    for proposal_id in by_content(user).values():
        user.review_proposal(proposal_id, "approve")
    status = related.services.compaction.compact("t1", "alice", "a2p", "memories.json").as_json()
    assert status["within_targets"] is True, status
    (kept,) = user.get_document("a2p", "memories.json").content["memories"]["a2p:semantic"]
    assert kept["consolidatedFrom"] in (["mem_1"], ["mem_2"])
    assert kept["id"] not in kept["consolidatedFrom"]
    (change, *_) = user.get_history("a2p", "memories.json").raw["changes"]
    assert change["reason"] == "compaction" and change["actor"].startswith("memnet-")


def test_an_episodic_memory_used_often_and_held_with_confidence_becomes_semantic(
    agent: MemnetClient, user: MemnetClient, related: World
):
    """a2p's automatic promotion: confidence at least 0.9 and more than 10 uses."""
    for n, confidence in ((1, 0.95), (2, 0.95), (3, 0.85)):
        value = {**memory(f"ep_{n}", f"Asked about flights on day {n}", "a2p:interests.travel")}
        propose(
            agent, "episodic", {**value, "confidence": confidence, "metadata": {"useCount": 10}}
        )
    for proposal_id in by_content(user).values():
        user.review_proposal(proposal_id, "approve")
    used = {
        "op": "replace",
        "path": "/content/memories/a2p:episodic/0/metadata/useCount",
        "value": 11,
    }
    user.update("a2p", "memories.json", lambda _: [used], confidence=1.0, evidence=EVIDENCE)
    used3 = {**used, "path": "/content/memories/a2p:episodic/2/metadata/useCount", "value": 30}
    user.update("a2p", "memories.json", lambda _: [used3], confidence=1.0, evidence=EVIDENCE)
    related.services.compaction.compact("t1", "alice", "a2p", "memories.json")
    memories = user.get_document("a2p", "memories.json").content["memories"]
    assert [m["id"] for m in memories["a2p:semantic"]] == ["ep_1"]  # 11 uses, 0.95
    assert sorted(m["id"] for m in memories["a2p:episodic"]) == ["ep_2", "ep_3"]  # 10; 0.85
    (change, *_) = user.get_history("a2p", "memories.json").raw["changes"]
    assert change["reason"] == "compaction" and "promote" in change["reason_codes"]
