"""Sensitivity (issue 15, capability 5; docs/profiles.md "Sensitivity") on a2p-v1: health
and financial memories are restricted, relationships sensitive (by category); the
agent (clearance standard) sees, changes and is shown only what is within it; the
user's app (clearance sensitive) sees everything. Both backends and transports."""

from __future__ import annotations

from typing import Any

from tests.clients import ApiClient, Reply
from tests.related.conftest import A2P_USER_KEY

REVIEWER_KEY = "a2p-reviewer-key"  # review role, clearance standard

USER = "/v1/tenants/t1/users/u1"
MEMORIES = f"{USER}/documents/a2p/memories.json"
SEMANTIC = "/content/memories/a2p:semantic"
EVIDENCE = {"conversation_id": "c1"}


def memory(n: int, category: str) -> dict[str, Any]:
    return {"id": f"mem_{n}", "content": f"memory {n}", "category": category}


STORED = [
    memory(1, "a2p:health.sleep"),
    memory(2, "a2p:interests.music"),
    memory(3, "a2p:relationships"),
    memory(4, "a2p:professional"),
]


def seed(user: ApiClient) -> Reply:
    ops = [{"op": "add", "path": f"{SEMANTIC}/-", "value": m} for m in STORED]
    reply = user.request(
        "PATCH",
        MEMORIES,
        {"ops": ops, "confidence": 1.0, "evidence": EVIDENCE},
        {"If-None-Match": "*", "Idempotency-Key": "seed"},
    )
    assert reply.status == 201, reply.data
    return reply


def semantic(reply: Reply) -> list[str]:
    assert reply.status == 200, reply.data
    return [m["id"] for m in reply.data["document"]["content"]["memories"]["a2p:semantic"]]


def test_each_caller_reads_its_view_with_the_same_etag(a2p: ApiClient):
    user = a2p.as_key(A2P_USER_KEY)
    seed(user)
    mine, theirs = user.request("GET", MEMORIES), a2p.request("GET", MEMORIES)
    assert semantic(mine) == ["mem_1", "mem_2", "mem_3", "mem_4"]
    assert semantic(theirs) == ["mem_2", "mem_4"]
    assert mine.headers["etag"] == theirs.headers["etag"]


def test_an_index_in_a_callers_view_is_the_item_it_saw(a2p: ApiClient):
    user, reviewer = a2p.as_key(A2P_USER_KEY), a2p.as_key(REVIEWER_KEY)
    etag = seed(user).data["etag"]
    reply = reviewer.request(
        "PATCH",
        MEMORIES,
        {
            "ops": [{"op": "remove", "path": f"{SEMANTIC}/1"}],
            "confidence": 1.0,
            "evidence": EVIDENCE,
        },  # mem_4, as the reviewer saw it
        {"If-Match": etag, "Idempotency-Key": "rm"},
    )
    assert reply.status == 200, reply.data
    assert semantic(reply) == ["mem_2"]  # the answer is the reviewer's view too
    assert semantic(user.request("GET", MEMORIES)) == ["mem_1", "mem_2", "mem_3"]


def test_the_agent_cannot_add_above_its_clearance_nor_read_the_history(a2p: ApiClient):
    user = a2p.as_key(A2P_USER_KEY)
    seed(user)
    etag = a2p.request("GET", MEMORIES).headers["etag"]
    # A review-required profile turns the agent's write into a proposal; the proposal
    # itself carries no category, and the user's queue shows it, the agent's does not.
    proposed = a2p.request(
        "PATCH",
        MEMORIES,
        {"ops": [{"op": "add", "path": f"{SEMANTIC}/-", "value": memory(5, "a2p:health")}],
         "confidence": 0.9, "evidence": EVIDENCE},
        {"If-Match": etag, "Idempotency-Key": "p5"},
    )  # fmt: skip
    assert proposed.status == 200 and proposed.data["redirected_ops"], proposed.data
    assert a2p.request("GET", f"{USER}/proposals").data["proposals"] == []
    assert len(user.request("GET", f"{USER}/proposals").data["proposals"]) == 1
    refused = a2p.request("GET", MEMORIES + ":history")
    assert (refused.status, refused.error_code) == (403, "CLEARANCE_REQUIRED")
    assert user.request("GET", MEMORIES + ":history").status == 200


def test_context_assembly_gives_the_agent_its_view(a2p: ApiClient):
    seed(a2p.as_key(A2P_USER_KEY))
    reply = a2p.request("POST", f"{USER}/context:assemble", {})
    assert reply.status == 200, reply.data
    (doc,) = [d for d in reply.data["documents"] if d["binding_id"] == "memories"]
    ids = [m["id"] for m in doc["document"]["content"]["memories"]["a2p:semantic"]]
    assert ids == ["mem_2", "mem_4"]


def test_a_reviewer_below_a_candidates_class_neither_sees_nor_approves_it(a2p: ApiClient):
    user, reviewer = a2p.as_key(A2P_USER_KEY), a2p.as_key(REVIEWER_KEY)
    seed(user)
    etag = a2p.request("GET", MEMORIES).headers["etag"]
    a2p.request(
        "PATCH",
        MEMORIES,
        {"ops": [{"op": "add", "path": f"{SEMANTIC}/-", "value": memory(6, "a2p:health")}],
         "confidence": 0.9, "evidence": EVIDENCE},
        {"If-Match": etag, "Idempotency-Key": "p6"},
    )  # fmt: skip
    assert reviewer.request("GET", f"{USER}/proposals").data["proposals"] == []
    (entry,) = user.request("GET", f"{USER}/proposals").data["proposals"]
    url = f"{USER}/proposals/{entry['proposal_id']}/approve"
    refused = reviewer.request("POST", url)
    assert (refused.status, refused.error_code) == (403, "CLEARANCE_EXCEEDED"), refused.data
    assert user.request("POST", url).status == 200
    assert semantic(user.request("GET", MEMORIES))[-1] == "mem_6"
    assert semantic(a2p.request("GET", MEMORIES)) == ["mem_2", "mem_4"]


def test_a_write_that_changes_hidden_content_is_refused(a2p: ApiClient):
    reviewer = a2p.as_key(REVIEWER_KEY)
    etag = seed(a2p.as_key(A2P_USER_KEY)).data["etag"]
    copy = {"op": "add", "path": f"{SEMANTIC}/-", "value": memory(7, "a2p:relationships")}
    reply = reviewer.request(
        "PATCH",
        MEMORIES,
        {"ops": [copy], "confidence": 1.0, "evidence": EVIDENCE},
        {"If-Match": etag, "Idempotency-Key": "r7"},
    )
    assert (reply.status, reply.error_code) == (403, "CLEARANCE_EXCEEDED"), reply.data
